"""Queries embedded by ONNX Runtime: the index's own model, exported once, loaded in 0.2 s.

Importing sentence-transformers (torch, transformers, scikit-learn) takes 3–4 s of CPU on a
small machine, and a command that embeds one query would pay it every time. The transformer of a
sentence-transformers model whose pipeline is Transformer → mean or CLS pooling (→ Normalize) is
exported to ONNX the first time it is loaded (about a second, by torch, which is loaded then
anyway) and kept under the ``encoders`` setting (default CACHE/encoders), keyed by the model
files' names, sizes and times. From then on (that process too) queries embed with ONNX Runtime
and the model's fast tokenizer (0.1 s of imports), from a copy of the export whose weights lie
in a file of their own, which ONNX Runtime maps (:func:`mapped`, made by the first load).
Vectors agree with sentence-transformers' to 1e-6 (tests/integration/test_onnx_encoder.py).
Index writes keep sentence-transformers (GPU, worker pools); queries always run here on the
CPU, where one query takes milliseconds.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.core.settings import encoders_dir

from .reach import model_reach

ONNX_FILE = "model.onnx"
MAPPED = "mapped"
"""Beside an export: the same graph with its weights in a file of their own (:func:`mapped`)."""
WEIGHTS_FILE = "model.data"
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


@dataclass(frozen=True)
class EncoderSpec:
    """What the ONNX path needs to know of a model folder: its pooling and its input length."""

    folder: Path
    pooling: str  # "mean" or "cls"
    max_length: int

    @property
    def key(self) -> str:
        """Return a name for this model's export: changed files give a new one."""
        digest = hashlib.sha256(str(self.folder.resolve()).encode())
        for path in sorted(p for p in self.folder.rglob("*") if p.is_file()):
            stat = path.stat()
            digest.update(
                f"{path.relative_to(self.folder)}:{stat.st_size}:{stat.st_mtime_ns}".encode()
            )
        return f"{self.folder.name}-{digest.hexdigest()[:16]}"

    @property
    def exported(self) -> Path:
        """Return where this model's ONNX file is (or will be) kept."""
        return encoders_dir() / self.key / ONNX_FILE


def encoder_spec(folder: str | Path) -> EncoderSpec | None:
    """Return the spec of a sentence-transformers folder the ONNX path can run, else ``None``.

    ``None`` for a name that is not a local folder, a folder without a fast tokenizer, or a
    pipeline other than Transformer → mean or CLS pooling (→ Normalize).
    """
    folder = Path(folder)
    try:
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        config = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))
        kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
        if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
            return None
        pooling_file = folder / modules[1]["path"] / "config.json"
        pooling = json.loads(pooling_file.read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    modes = [k for k, on in pooling.items() if k.startswith("pooling_mode_") and on]
    chosen = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls"}
    if len(modes) != 1 or modes[0] not in chosen or not (folder / "tokenizer.json").is_file():
        return None
    return EncoderSpec(folder, chosen[modes[0]], int(config.get("max_seq_length") or 512))


def export(transformer: Any, spec: EncoderSpec) -> Path:
    """Write the ONNX graph of a loaded Hugging Face ``transformer`` for ``spec`` (atomically)."""
    import warnings

    import torch

    class Outputs(torch.nn.Module):  # the exporter wants positional tensors in, one tensor out
        def __init__(self) -> None:
            super().__init__()
            self.inner = transformer

        def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
            return self.inner(**dict(zip(names, tensors, strict=True))).last_hidden_state

    names = [n for n in _INPUTS if n != "token_type_ids" or _takes_token_types(transformer)]
    sample = tuple(torch.ones((2, 8), dtype=torch.long) for _ in names)
    target = spec.exported
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{ONNX_FILE}.{os.getpid()}.partial")
    axes = {n: {0: "batch", 1: "tokens"} for n in [*names, "hidden"]}
    was_training = transformer.training
    transformer.eval()
    try:
        with warnings.catch_warnings():
            # the tracer warns of shapes it fixes as constants; the test compares every length
            warnings.simplefilter("ignore")
            torch.onnx.export(
                Outputs().cpu(), sample, str(partial), input_names=names, output_names=["hidden"],
                dynamic_axes=axes, opset_version=17, dynamo=False,
            )  # fmt: skip
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
        transformer.train(was_training)
    return target


def _takes_token_types(transformer: Any) -> bool:
    return getattr(transformer.config, "type_vocab_size", 0) > 0


def mapped(exported: Path) -> Path:
    """Return the export with its weights in a file beside the graph, written once.

    ONNX Runtime maps such a file instead of parsing 90 MB of weights out of the graph and
    copying them: a session in about 0.1 s instead of 0.25 (all-MiniLM-L6-v2, 2 cores). The
    outputs are the same to the bit. Where the copy cannot be written (a read-only cache, a
    damaged export), the export is read whole as before.
    """
    target = exported.parent / MAPPED / ONNX_FILE
    if target.is_file():
        return target
    partial = exported.parent / f".{MAPPED}.{os.getpid()}.partial"
    try:
        import onnx

        partial.mkdir()
        onnx.save_model(
            onnx.load(str(exported)), str(partial / ONNX_FILE), save_as_external_data=True,
            all_tensors_to_one_file=True, location=WEIGHTS_FILE, size_threshold=1024,
        )  # fmt: skip
        os.replace(partial, target.parent)  # whole, or (another process's first) not at all
    except Exception:  # any failure leaves the export to be read as it is, never a query
        pass
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return target if target.is_file() else exported


class OnnxEmbedder:
    """The embedder (:class:`~hopgraph.graph_store.embedding.embedders.Embedder`) of an export."""

    def __init__(self, name: str, spec: EncoderSpec, batch_size: int = 32) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.log_severity_level = 3  # warnings about unused initialisers are noise
        # ONNX Runtime's idle threads spin, waiting for the next run: between one query's
        # embedding and its retrieval they took the second core from the search (dense, query
        # embedded each time, musique dev on 2 cores: p50 / p95 8.0 / 14.3 ms spinning, 5.1 /
        # 6.0 ms not; evals/bench --index, "with the query's embedding").
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(
            str(mapped(spec.exported)), options, providers=["CPUExecutionProvider"]
        )
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.name, self.spec, self.batch_size = name, spec, batch_size
        self.tokenizer = Tokenizer.from_file(str(spec.folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(spec.max_length)  # sentence-transformers' length
        self.tokenizer.enable_padding()
        self.dimension = int(self._encode(["dimension"]).shape[1])

    def embed(
        self, texts: Sequence[str], progress: Callable[[int], None] | None = None
    ) -> np.ndarray:
        """Encode texts in batches (longest first, as sentence-transformers pads), normalised."""
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            out[rows] = self._encode([texts[i] for i in rows])
            if progress:
                progress(len(rows))
        return out

    def _encode(self, texts: list[str]) -> np.ndarray:
        reach = model_reach(self.spec.max_length)
        encoded = self.tokenizer.encode_batch([text[:reach] for text in texts])
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self.session.run(None, {n: feed[n] for n in self.inputs})[0]
        if self.spec.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.where(norms == 0, 1.0, norms)).astype(np.float32)

    @cached_property
    def counter(self) -> Any:
        """The tokenizer without truncation or padding, loaded when tokens are first counted.

        Queries never count: a second load of tokenizer.json cost each one 0.05 s.
        """
        from tokenizers import Tokenizer

        counter = Tokenizer.from_file(str(self.spec.folder / "tokenizer.json"))
        counter.no_truncation()
        counter.no_padding()
        return counter

    def count_tokens(self, text: str) -> int:
        """Count word pieces with the model's own tokenizer."""
        return len(self.counter.encode(text, add_special_tokens=False).ids)
