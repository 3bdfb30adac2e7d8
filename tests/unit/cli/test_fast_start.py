"""Start-up: the parser imports no heavy library, and a slow load says what it is doing."""

import json
import subprocess
import sys
import time

import pytest

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


def test_weights_are_read_without_torch_as_torch_reads_them(tmp_path):
    import numpy as np
    import torch

    from hopgraph.tools.shared.weights import SHIPPED, read_weights

    strided, double = torch.arange(12.0).reshape(3, 4).t(), torch.tensor([1.5], dtype=torch.float64)
    state = {"t": strided, "d": double}
    torch.save({"record": {"method": "x"}, "state": state}, tmp_path / "w.pt")
    files = [tmp_path / "w.pt", *SHIPPED.glob("*.pt")]
    for path in files:
        ours, theirs = read_weights(path), torch.load(path, weights_only=True)
        assert ours["record"] == theirs["record"]
        for name, tensor in theirs["state"].items():
            assert ours["state"][name].dtype == tensor.numpy().dtype
            assert np.array_equal(ours["state"][name], tensor.numpy())


def test_trained_grag_and_iier_retrieve_without_torch_as_torch_scores(tmp_path):
    import numpy as np
    import torch

    from hopgraph.graph_store import Index
    from hopgraph.tools import make_retriever
    from hopgraph.tools.grag.graph import GRAGSettings
    from hopgraph.tools.grag.model import new_model, score_graph
    from hopgraph.tools.iier.scorer import ScorerSettings, new_scorer
    from hopgraph.tools.shared.weights import save_weights
    from tests.conftest import build_docs_index

    index = build_docs_index(tmp_path / "idx", "hashing")
    with Index.open(index) as idx:
        d = idx.manifest.embedder["dimension"]
    grag, iier = new_model(d, GRAGSettings(hidden=4), seed=0), new_scorer(d, ScorerSettings(), 0)
    for net in (grag, iier):  # weights that have learned something: no zeroed output layers
        for p in net.parameters():
            torch.nn.init.normal_(p, std=0.1)
    record = {"model": "hashing", "dimension": d}
    save_weights(index / "models" / "grag.pt", {**record, "method": "grag",
                 "settings": {"hidden": 4}}, grag.state_dict())  # fmt: skip
    save_weights(index / "models" / "iier.pt", {**record, "method": "iier",
                 "settings": {}}, iier.state_dict())  # fmt: skip
    with Index.open(index) as idx:
        retriever = make_retriever("grag", idx)
        graph = retriever.builder.build("Where was Larry Alcala educated?")
        ours = retriever.scores(graph)
        assert np.allclose(ours, score_graph(grag, graph), atol=1e-5)
        assert np.abs(ours - graph.cosine).max() > 1e-3  # the weights count
    for method in ("grag", "iier"):
        argv = ["retrieve", "Larry", "--method", method, "--index", str(index)]
        assert _imported_by(argv, ("torch",)) == (0, [])


@pytest.mark.parametrize(
    ("method", "unneeded"),
    [
        ("bm25", ("pydantic_settings", "onnxruntime", "scipy", "bm25s", "networkx", "torch")),
        ("hybrid", ("scipy", "bm25s", "networkx", "torch", "langchain_core", "markdown_it")),
        ("dense", ("bm25s", "scipy", "networkx", "torch", "langchain_core", "markdown_it")),
        ("gnn_ret", ("scipy", "networkx", "torch", "langchain_core", "markdown_it")),
        ("naive_ge", ("networkx", "torch", "langchain_core", "markdown_it")),
        ("iier", ("networkx", "torch", "langchain_core", "markdown_it")),
    ],
)
def test_a_method_imports_only_what_it_runs_on(method, unneeded, tmp_path):
    from tests.conftest import build_docs_index

    index = build_docs_index(tmp_path / "idx", "hashing")
    argv = ["retrieve", "Stanley", "--method", method, "--index", str(index)]
    assert _imported_by(argv, unneeded) == (0, [])


def test_check_reads_every_graph_file_without_scipy(tmp_path):
    from tests.conftest import build_docs_index

    index = build_docs_index(tmp_path / "idx", "hashing")
    assert _imported_by(["check", "--index", str(index)], ("scipy", "bm25s", "torch")) == (0, [])


def _imported_by(argv: list[str], modules: tuple[str, ...]) -> tuple[int, list[str]]:
    """Run `hopgraph ARGV` in a fresh interpreter; return its exit code and which ``modules`` it
    imported."""
    probe = (
        "import sys\nfrom hopgraph.cli import main\n"
        f"code = main({argv!r}) or 0\n"
        f"print(code, sorted(m for m in {modules!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    code, found = out.stdout.strip().splitlines()[-1].split(" ", 1)
    return int(code), json.loads(found.replace("'", '"'))


def test_an_export_is_read_with_its_weights_mapped_and_answers_the_same(tmp_path):
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    from hopgraph.graph_store.embedding.onnx_encoder import WEIGHTS_FILE, mapped

    weights = np.random.default_rng(0).normal(size=(64, 32)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 32])],
        [numpy_helper.from_array(weights, "w")],
    )  # fmt: skip
    exported = tmp_path / "model.onnx"
    onnx.save_model(helper.make_model(graph), str(exported))
    copy = mapped(exported)
    assert copy != exported and (copy.parent / WEIGHTS_FILE).stat().st_size == weights.nbytes
    assert mapped(exported) == copy  # written once
    x = np.random.default_rng(1).normal(size=(3, 64)).astype(np.float32)
    answers = [ort.InferenceSession(str(p)).run(None, {"x": x})[0] for p in (exported, copy)]
    assert np.array_equal(*answers)
    damaged = tmp_path / "damaged" / "model.onnx"
    damaged.parent.mkdir()
    damaged.write_bytes(b"not a model")
    assert mapped(damaged) == damaged and not list(damaged.parent.glob(".mapped*"))
