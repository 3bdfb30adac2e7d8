"""Every retrieval as an OpenTelemetry span, in the GenAI conventions' and OpenInference's words.

A retrieval is a span named ``retrieval`` (kind INTERNAL) with ``gen_ai.operation.name =
retrieval``, ``gen_ai.data_source.id`` (the index folder's name), ``gen_ai.retrieval.top_k`` and
OpenInference's ``openinference.span.kind = RETRIEVER``; embedding the query and a graph
method's expansion are its children. Documents (ids, scores, texts, metadata) and the query's
text are recorded only with ``HOPGRAPH_TRACE_CONTENT=1``: as ``gen_ai.retrieval.documents``
(``[{"id", "score"}]`` as JSON) and OpenInference's ``retrieval.documents.{i}.document.*`` and
``input.value``, which Phoenix shows.

Nothing is paid while nothing traces: the API is used only once something in the process has
imported it (an application that set up the SDK, `hopgraph` with ``OTEL_EXPORTER_OTLP_*`` set:
:func:`export_from_env`); until then no span is made and ``opentelemetry`` is not even imported.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from hopgraph.core.errors import InputError

from .hits import Hit

CONTENT = "HOPGRAPH_TRACE_CONTENT"
"""Set to 1 to record the query's text and the documents (ids, scores, texts) on spans."""


def content_on() -> bool:
    """Tell whether spans carry the query and the documents (``HOPGRAPH_TRACE_CONTENT=1``)."""
    return os.environ.get(CONTENT, "") == "1"


@contextmanager
def span(name: str, attributes: Mapping[str, Any]) -> Iterator[Any | None]:
    """Open a child span of the current one (None while nothing in the process traces)."""
    api = sys.modules.get("opentelemetry.trace")
    if api is None:
        yield None
        return
    tracer = api.get_tracer("hopgraph")
    with tracer.start_as_current_span(name, attributes=dict(attributes)) as opened:
        yield opened


@contextmanager
def retrieval(method: str, source: str, query: str, k: int) -> Iterator[Any | None]:
    """Open a retrieval's span: ``method`` over the index named ``source``, top ``k``."""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "retrieval",
        "gen_ai.data_source.id": source,
        "gen_ai.retrieval.top_k": k,
        "openinference.span.kind": "RETRIEVER",
        "hopgraph.method": method,
    }
    if content_on():
        attributes["input.value"] = query
    with span("retrieval", attributes) as opened:
        yield opened


def record_hits(opened: Any | None, hits: Sequence[Hit]) -> None:
    """Record what a retrieval returned on its span: how many, and the documents if asked."""
    if opened is None:
        return
    opened.set_attribute("hopgraph.hits", len(hits))
    if not content_on():
        return
    found = [{"id": h.id, "score": h.score} for h in hits]
    opened.set_attribute("gen_ai.retrieval.documents", json.dumps(found))
    for i, hit in enumerate(hits):
        prefix = f"retrieval.documents.{i}.document"
        opened.set_attribute(f"{prefix}.id", hit.id)
        opened.set_attribute(f"{prefix}.score", hit.score)
        opened.set_attribute(f"{prefix}.content", hit.text)
        metadata = {**hit.metadata, "doc_id": hit.doc_id, "title": hit.title}
        opened.set_attribute(f"{prefix}.metadata", json.dumps(metadata, default=str))


OTLP = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
"""The standard variables: with either set, a command exports its spans over OTLP/HTTP."""


def export_from_env() -> Callable[[], None] | None:
    """Send this process's spans over OTLP/HTTP when OTLP's standard variables say where.

    Returns what flushes and ends the export (None: nothing set, nothing imported). Needs the
    ``otel`` extra (the SDK and its OTLP exporter); without it, an InputError says so.
    """
    if not any(os.environ.get(name) for name in OTLP):
        return None
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ModuleNotFoundError as err:
        raise InputError(
            f"{' or '.join(OTLP)} is set, but OpenTelemetry's SDK is not installed ({err.name})",
            'install the extra: pip install "hopgraph[otel]" (or unset the variable)',
        ) from err
    service = os.environ.get("OTEL_SERVICE_NAME", "hopgraph")
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider.shutdown
