"""Queries embedded by the ONNX export agree with sentence-transformers, and start fast."""

import os
import subprocess
import sys

import numpy as np
import pytest

from hopgraph.graph_store.embedding.embedders import (
    SentenceTransformerEmbedder,
    load_query_embedder,
    resolve_model_path,
)
from hopgraph.graph_store.embedding.onnx_encoder import OnnxEmbedder, encoder_spec, export

MODEL = "all-MiniLM-L6-v2"


@pytest.fixture(scope="module")
def reference():
    return SentenceTransformerEmbedder(MODEL)


def test_the_export_embeds_as_sentence_transformers_does(
    reference, sample_docs, tmp_path, monkeypatch
):
    spec = encoder_spec(resolve_model_path(MODEL))
    assert spec is not None and spec.pooling == "mean" and spec.max_length == 256
    monkeypatch.setenv("HOPGRAPH_ENCODERS", str(tmp_path))
    export(reference.model[0].auto_model, spec)
    onnx = OnnxEmbedder(MODEL, spec)
    # every length: one word, questions, passages past the 256-token cut, padded batches
    texts = ["x", "Who founded it?", *(d.text for d in sample_docs), " ".join(["word"] * 600)]
    theirs, ours = reference.embed(texts), onnx.embed(texts)
    assert ours.shape == theirs.shape == (len(texts), 384)
    assert float(np.abs(ours - theirs).max()) < 1e-5
    # a text far past what the model reads (it is cut before tokenizing): as if read whole
    huge = " ".join(d.text for d in sample_docs)[:100_000]
    whole = reference.model.encode([huge], normalize_embeddings=True, convert_to_numpy=True)
    assert len(huge) > 3 * (spec.max_length + 1) * 102
    assert float(np.abs(onnx.embed([huge]) - whole).max()) < 1e-5
    assert float(np.abs(reference.embed([huge]) - whole).max()) < 1e-6
    assert onnx.count_tokens("the Little Orchestra Society") == reference.count_tokens(
        "the Little Orchestra Society"
    )


def test_a_query_process_loads_the_export_not_sentence_transformers(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HOPGRAPH_ENCODERS": str(tmp_path)}
    probe = (
        "import sys; "
        "from hopgraph.graph_store.embedding.embedders import load_query_embedder as q; "
        f"e = q({MODEL!r}); print(type(e).__name__, 'sentence_transformers' in sys.modules)"
    )
    first = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    # it loaded sentence-transformers to export, then queries as every later process will
    assert first.stdout.split() == ["OnnxEmbedder", "True"]
    assert "exporting all-MiniLM-L6-v2 to ONNX" in first.stderr
    second = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert second.returncode == 0, second.stderr
    assert second.stdout.split() == ["OnnxEmbedder", "False"]  # torch never imported


def test_hashing_has_no_export():
    assert type(load_query_embedder("hashing")).__name__ == "HashingEmbedder"
