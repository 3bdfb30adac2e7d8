"""Evidence as agents keep it in their state: plain, checkpointable records of retrieved chunks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from typing_extensions import TypedDict  # pydantic reads it on Python < 3.12 (server schemas)

from hopgraph.graph_store import Index
from hopgraph.graph_store.documents.filters import Where
from hopgraph.graph_store.documents.schema import Scalar
from hopgraph.prompts import passage
from hopgraph.tools import RETRIEVERS, Hit, make_retriever
from hopgraph.tools.shared.expand import Expansion, expand_hits

from .extractive import extractive_answer


class Evidence(TypedDict):
    """A retrieved chunk, with the step that found it and what a hit carries besides its text.

    ``metadata``: the hit's (tools.hits.Hit.metadata): its document's fields, ``source``,
    ``section``, ``position`` and ``chunks``; the LangGraph server's ``sources`` show it.
    """

    id: str
    doc_id: str
    title: str
    text: str
    score: float
    found_by: str
    metadata: dict[str, Scalar]


def evidence_of(hits: Sequence[Hit], found_by: str) -> list[Evidence]:
    """Turn retriever hits into evidence records labelled with the step that found them."""
    return [
        Evidence(id=h.id, doc_id=h.doc_id, title=h.title, text=h.text, score=h.score,
                 found_by=found_by, metadata=dict(h.metadata))
        for h in hits
    ]  # fmt: skip


def chunk_evidence(index: Index, chunk_id: str, score: float, found_by: str) -> Evidence:
    """Return the evidence record of one chunk of ``index``."""
    c = index.chunk(chunk_id)
    return Evidence(id=c.id, doc_id=c.doc_id, title=c.title, text=c.text, score=score,
                    found_by=found_by, metadata=index.metadata(chunk_id))  # fmt: skip


def gather(left: list[Evidence] | None, right: list[Evidence] | None) -> list[Evidence]:
    """Append unseen chunks in order (the reducer of ``gathered``: every chunk an agent saw)."""
    out = list(left or [])
    seen = {e["id"] for e in out}
    for item in right or []:
        if item["id"] not in seen:
            seen.add(item["id"])
            out.append(item)
    return out


def numbered_passages(evidence: Sequence[Evidence]) -> str:
    """Render passages for a prompt: "[1] Document: …" then the text, one per block."""
    return "\n\n".join(f"[{n}] {passage(e['title'], e['text'])}" for n, e in enumerate(evidence, 1))


def titled_passages(evidence: Sequence[Evidence]) -> str:
    """Render passages as the papers' readers see them: the title line, then the text."""
    return "\n\n".join(passage(e["title"], e["text"]) for e in evidence)


def answer_alone(
    index: Index,
    method: str,
    question: str,
    k: int,
    preset: str,
    where: Where | None = None,
    expand: str | None = None,
) -> dict[str, Any]:
    """Answer with no LLM: the extractive answer (:mod:`.extractive`) and its passages.

    Returns ``{"method", "answer": {"text", "sentences", "answering"}, "evidence"}``; each
    evidence passage carries its ``answering`` sentence, the one to show whole.
    """
    method = method if method in RETRIEVERS else "gnn_ret"  # an agent's: the one agents build on
    hits = make_retriever(method, index, preset=preset).retrieve(question, k, where)
    if expand:
        hits = expand_hits(index, hits, Expansion.parse(expand))
    answer = extractive_answer(index, question, hits)
    evidence = [h.to_dict() | {"answering": answer.answering.get(h.id, "")} for h in hits]
    return {"method": method, "answer": answer.to_dict(), "evidence": evidence}
