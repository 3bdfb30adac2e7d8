"""The local trace store: agent runs recorded as trees, listed, drawn and exported."""

import pytest

from hopgraph.agents.run import run_agent
from hopgraph.cli import main
from hopgraph.core.traces import TraceRecorder, list_traces, load_trace, render_html, render_tree
from tests.agent_scripts import QUESTION, rgnn_script
from tests.fakes import ScriptedChatModel


@pytest.fixture(scope="module")
def index(docs_index):
    return docs_index


def test_a_run_is_recorded_as_a_tree(index, tmp_path):
    store = tmp_path / "traces.sqlite"
    chat = ScriptedChatModel(respond=rgnn_script(["Critique: yes"]))
    result = run_agent("rgnn_ret", QUESTION, index, chat, recorder=TraceRecorder(store))
    root = load_trace(store, result.trace_id[:8])
    assert root.span_id == result.trace_id and root.kind == "graph" and root.name == "rgnn_ret"
    nodes = [c.name for c in root.children if c.kind == "node"]
    assert nodes == ["ask_next_step", "retrieve", "answer_step", "critique", "answer"]
    llm = [g for c in root.children for g in c.children if g.kind == "llm"]
    assert len(llm) == 4 and all(s.prompt_tokens > 0 for s in llm)
    assert "Where was Larry Alcala educated?" in llm[0].outputs
    tree = render_tree(root)
    assert tree.splitlines()[1].startswith("├─ ask_next_step [node]")
    assert tree.splitlines()[2].startswith("│  └─ ScriptedChatModel [llm]")
    [row] = list_traces(store)
    assert row["llm_calls"] == 4 and row["status"] == "ok" and row["question"] == QUESTION
    page = render_html(root)
    assert [g.name for c in root.children for g in c.children if g.kind == "route"] == [
        "after_critique"
    ]
    assert page.startswith("<!doctype html>") and page.count("<details") == 1 + 5 + 4 + 1
    assert "&lt;" not in root.name and "critique" in page


def test_a_failed_run_keeps_its_finished_spans_and_the_error(index, tmp_path):
    store = tmp_path / "traces.sqlite"
    failing = ScriptedChatModel(respond=rgnn_script(["Critique: no"]), fail_after=2)
    with pytest.raises(RuntimeError):
        run_agent("rgnn_ret", QUESTION, index, failing, recorder=TraceRecorder(store))
    [row] = list_traces(store)
    assert row["status"] == "error" and row["llm_calls"] == 3
    root = load_trace(store, row["trace_id"])
    assert "went away" in root.error
    assert [c.name for c in root.children if c.error] == ["critique"]


def test_trace_cli(index, tmp_path, capsys):
    store = tmp_path / "traces.sqlite"
    chat = ScriptedChatModel(respond=rgnn_script(["Critique: yes"]))
    result = run_agent("rgnn_ret", QUESTION, index, chat, recorder=TraceRecorder(store))
    short = result.trace_id[:8]
    assert main(["trace", "--store", str(store), "list"]) == 0
    assert short in capsys.readouterr().out
    assert main(["trace", "--store", str(store), "show", short]) == 0
    assert "└─ answer [node]" in capsys.readouterr().out
    out = tmp_path / "t.html"
    assert main(["trace", "--store", str(store), "export", short, "--html", "--out", str(out)]) == 0
    assert "<details" in out.read_text() and str(out) in capsys.readouterr().out
    assert main(["trace", "--store", str(store), "show", "zzz"]) == 2
    assert "no trace with id 'zzz'" in capsys.readouterr().err
    assert main(["trace", "--store", str(tmp_path / "none.sqlite"), "list"]) == 2
