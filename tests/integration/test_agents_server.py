"""`hopgraph ask` end to end: each agent through the real ChatOpenAI client and a local server."""

import json

import pytest

from hopgraph.cli import main
from hopgraph.evals.servers.scripted_llm import ScriptedOpenAIServer
from tests.agent_scripts import (
    NOT_YET,
    QUESTION,
    TOG2_NO,
    TOG2_YES,
    gear_script,
    rgnn_script,
    tog2_script,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def index_dir(real_docs_index_dir):
    return real_docs_index_dir


def serve(script, monkeypatch, fail=None):
    """Start a server answering with ``script``; ``fail(prompt, n)`` may return an error first."""

    def respond(prompt, n):
        failure = fail(prompt, n) if fail else None
        return failure if failure is not None else (200, script(prompt))

    server = ScriptedOpenAIServer(respond)
    monkeypatch.setenv("HOPGRAPH_LLM_MODEL", "scripted-model")
    monkeypatch.setenv("HOPGRAPH_LLM_BASE_URL", server.url)
    monkeypatch.setenv("HOPGRAPH_LLM_TIMEOUT", "1")
    monkeypatch.setenv("HOPGRAPH_LLM_MAX_RETRIES", "2")
    return server


def ask(index_dir, tmp_path, *extra):
    store = str(tmp_path / "runs.db")
    return main(["ask", QUESTION, "--index", str(index_dir), "--checkpoints", store, *extra])


def test_rgnn_ret_through_a_500_and_a_timeout(index_dir, tmp_path, monkeypatch, capsys):
    def fail(prompt, n):
        if "critique whether" in prompt and "1936" not in prompt and n == 1:
            return 500, "internal error"  # the first round's critique, once
        if "answer the next step question" in prompt and "military" not in prompt and n == 1:
            return 3.0  # past the client's 1 s timeout: it retries
        return None

    script = rgnn_script(["Critique: no", "Critique: yes"])
    with serve(script, monkeypatch, fail) as server:
        assert ask(index_dir, tmp_path, "--method", "rgnn_ret", "--json") == 0
    result = json.loads(capsys.readouterr().out)
    assert result["answer"] == "1936" and [c["id"] for c in result["citations"]] == ["d2"]
    assert result["usage"]["calls"] == 7  # what the agent asked for
    assert result["usage"]["prompt_tokens"] > 0 and result["usage"]["completion_tokens"] > 0
    assert server.statuses.count(500) == 1
    assert len(server.requests) == 7 + 2  # the client retried the 500 and the timeout


def test_gear_streams_its_steps_and_respects_the_bound(index_dir, tmp_path, monkeypatch, capsys):
    with serve(gear_script([NOT_YET] * 3), monkeypatch) as server:
        assert ask(index_dir, tmp_path, "--method", "gear", "--max-steps", "2", "--stream") == 0
    out = capsys.readouterr().out
    nodes = [line.split("]")[0] + "]" for line in out.splitlines() if line.startswith("[")]
    assert nodes == [
        "[retrieve]", "[read]", "[reason]", "[rewrite]", "[retrieve]", "[read]", "[reason]",
        "[link_passages]", "[answer]",
    ]  # fmt: skip
    assert "[answer] answer (round bound 2 reached): 1936" in out
    assert "answer: 1936" in out and "University of Santo Tomas (d2)" in out
    assert "LLM: 8 calls" in out and len(server.requests) == 8


def test_a_run_that_stops_resumes_on_its_thread(index_dir, tmp_path, monkeypatch, capsys):
    def always_500_on_reason(prompt, n):
        return (500, "down") if "Answerable: Yes" in prompt else None

    script = gear_script([NOT_YET, "Answerable: Yes\nAnswer: 1936"])
    with serve(script, monkeypatch, always_500_on_reason):
        code = ask(index_dir, tmp_path, "--method", "gear", "--thread", "t-1")
    assert code == 2
    assert "--thread t-1 to resume" in capsys.readouterr().err
    with serve(script, monkeypatch) as server:
        assert ask(index_dir, tmp_path, "--method", "gear", "--thread", "t-1", "--json") == 0
    result = json.loads(capsys.readouterr().out)
    assert result["resumed"] and result["answer"] == "1936"
    # the first round's retrieve and read were not repeated: reason, rewrite, round 2, answer
    assert "Answerable: Yes" in server.requests[0]
    assert len(server.requests) == 1 + 1 + 3 + 1


def test_tog2_end_to_end_and_its_depth(index_dir, tmp_path, monkeypatch, capsys):
    with serve(tog2_script([TOG2_NO, TOG2_YES]), monkeypatch) as server:
        assert ask(index_dir, tmp_path, "--method", "tog2", "--json") == 0
    result = json.loads(capsys.readouterr().out)
    assert result["answer"] == "1936" and [c["id"] for c in result["citations"]] == ["d2"]
    assert result["usage"]["calls"] == len(server.requests) == 6
    with serve(tog2_script([TOG2_NO] * 3), monkeypatch) as server:
        assert ask(index_dir, tmp_path, "--method", "tog2", "--max-steps", "1", "--stream") == 0
    out = capsys.readouterr().out
    assert "[answer] answer (depth 1 reached): 1936" in out
    assert "LLM: 3 calls" in out and len(server.requests) == 3


def test_an_answer_that_cites_nothing_still_shows_its_evidence(
    index_dir, tmp_path, monkeypatch, capsys
):
    with serve(lambda prompt: "Answer: 1936", monkeypatch):  # no "Cited:" line
        assert ask(index_dir, tmp_path, "--method", "gnn_ret", "-k", "3") == 0
    out = capsys.readouterr().out
    assert "answer: 1936" in out
    assert "evidence the reader was shown (none of it cited):" in out
    shown = out.split("(none of it cited):")[1]
    assert "[1]  " in shown and "[3]  " in shown and "(d2)" in shown and "*" not in shown
