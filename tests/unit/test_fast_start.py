"""Start-up: the parser imports no heavy library, and a slow load says what it is doing."""

import json
import subprocess
import sys
import time

from hopgraph.graph_store.embedding.embedders import announced
from hopgraph.graph_store.embedding.onnx_encoder import encoder_spec

HEAVY = ("torch", "chromadb", "langchain_core", "langgraph", "networkx", "sentence_transformers")
PARSING = (*HEAVY, "numpy", "pydantic", "pydantic_settings", "importlib.metadata", "tqdm")
"""What `hopgraph --help` must not import either: 0.3 s of pydantic(-settings) and more."""


def test_help_imports_none_of_the_heavy_libraries():
    probe = (
        "import sys\nfrom hopgraph.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in {PARSING!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_version_is_read_when_asked_for():
    out = subprocess.run(
        [sys.executable, "-m", "hopgraph", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.startswith("hopgraph ")


def test_bm25_retrieval_does_not_import_chroma_or_the_model(tmp_path, corpus_file):
    from hopgraph.cli import main

    assert (
        main(
            ["index", str(corpus_file), "--index", str(tmp_path / "i"), "--model", "hashing", "-q"]
        )
        == 0
    )
    probe = (
        "import sys\nfrom hopgraph.cli import main\n"
        f"main(['retrieve', 'Stanley', '--method', 'bm25', '--index', {str(tmp_path / 'i')!r}])\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_a_slow_load_is_announced_and_a_quick_one_is_not(capsys):
    with announced("loading slow …", after=0.05):
        time.sleep(0.3)
    with announced("loading quick …", after=5):
        pass
    err = capsys.readouterr().err
    assert "loading slow …" in err and "loading quick" not in err


def _model(folder, modules, pooling, tokenizer=True):
    folder.mkdir()
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 128}))
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    if tokenizer:
        (folder / "tokenizer.json").write_text("{}")
    return folder


def test_only_mean_or_cls_pooled_transformers_take_the_onnx_path(tmp_path):
    st = "sentence_transformers.models."
    modules = [
        {"type": st + "Transformer", "path": ""},
        {"type": st + "Pooling", "path": "1_Pooling"},
    ]
    mean = {"pooling_mode_mean_tokens": True, "pooling_mode_cls_token": False}
    spec = encoder_spec(_model(tmp_path / "mean", modules, mean))
    assert spec is not None and (spec.pooling, spec.max_length) == ("mean", 128)
    cls = {"pooling_mode_cls_token": True}
    assert encoder_spec(_model(tmp_path / "cls", modules, cls)).pooling == "cls"
    assert (
        encoder_spec(_model(tmp_path / "max", modules, {"pooling_mode_max_tokens": True})) is None
    )
    assert encoder_spec(_model(tmp_path / "slow", modules, mean, tokenizer=False)) is None
    dense = [*modules, {"type": st + "Dense", "path": "2_Dense"}]
    assert encoder_spec(_model(tmp_path / "dense", dense, mean)) is None
    assert encoder_spec("not-a-folder") is None


def test_an_export_is_keyed_by_the_model_files(tmp_path, monkeypatch):
    monkeypatch.setenv("HOPGRAPH_ENCODERS", str(tmp_path / "enc"))
    st = "sentence_transformers.models."
    modules = [
        {"type": st + "Transformer", "path": ""},
        {"type": st + "Pooling", "path": "1_Pooling"},
    ]
    spec = encoder_spec(_model(tmp_path / "m", modules, {"pooling_mode_mean_tokens": True}))
    before = spec.exported
    assert before.is_relative_to(tmp_path / "enc")
    (tmp_path / "m" / "model.safetensors").write_bytes(b"new weights")
    assert spec.exported != before
