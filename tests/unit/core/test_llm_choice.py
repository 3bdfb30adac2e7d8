"""Who answers (`--llm`), the bounded repair with its labelled fallback, and the local model."""

import json

import pytest

from hopgraph.agents.answering import first_line
from hopgraph.cli import main
from hopgraph.core.errors import HopgraphError, LLMReplyError
from hopgraph.core.llm import (
    add_usage,
    choose_chat,
    describe,
    labelled,
    no_usage,
    parse_with_repair,
)
from hopgraph.core.local_llm import LocalChatModel
from hopgraph.evals.answers import AnswerRow, summarise
from tests.conftest import build_docs_index

ENDPOINT_VARS = ("HOPGRAPH_LLM_MODEL", "HOPGRAPH_LLM_BASE_URL", "HOPGRAPH_LLM_API_KEY")


@pytest.fixture
def no_endpoint(monkeypatch):
    for name in (*ENDPOINT_VARS, "OPENAI_API_KEY", "OPENAI_MODEL", "HOPGRAPH_LLM"):
        monkeypatch.delenv(name, raising=False)


def replies(*texts):
    """A ``send`` that returns ``texts`` in turn, one call each, and records the prompts."""
    sent, queue = [], list(texts)

    def send(prompt):
        sent.append(prompt)
        usage = no_usage()
        usage["calls"] = 1
        return queue.pop(0), usage

    return send, sent


def parse_int(reply: str) -> int:
    if not reply.strip().isdigit():
        raise ValueError("no number")
    return int(reply)


def test_a_readable_reply_costs_one_call():
    send, sent = replies("7")
    value, usage = parse_with_repair(send, "how many?", parse_int, lambda _: -1)
    assert value == 7 and len(sent) == 1
    assert (usage["calls"], usage["structured"], usage["parse_failures"]) == (1, 1, 0)


def test_one_repair_names_what_was_wrong_then_counts_as_repaired():
    send, sent = replies("seven", "7")
    value, usage = parse_with_repair(send, "how many?", parse_int, lambda _: -1)
    assert value == 7 and sent[1].startswith("how many?\n\nYour previous reply could not be read")
    assert "(no number)" in sent[1] and "seven" in sent[1]
    assert (usage["calls"], usage["parse_failures"], usage["repaired"], usage["fallbacks"]) == (
        2, 1, 1, 0,
    )  # fmt: skip


def test_a_second_unreadable_reply_falls_back_or_raises_without_a_fallback():
    send, sent = replies("seven", "eight")
    value, usage = parse_with_repair(send, "how many?", parse_int, lambda reply: len(reply))
    assert value == 5 and len(sent) == 2  # the fallback sees the repaired reply; no third call
    assert (usage["parse_failures"], usage["repaired"], usage["fallbacks"]) == (1, 0, 1)
    send, _ = replies("seven", "eight")
    with pytest.raises(LLMReplyError, match="could not be read"):
        parse_with_repair(send, "how many?", parse_int)


def test_fallback_lines_are_labelled_and_usage_adds_old_checkpoints():
    fell = no_usage() | {"fallbacks": 1}
    assert labelled("critique: yes", no_usage(), "taken as yes") == "critique: yes"
    assert labelled("critique: yes", fell, "taken as yes").endswith("; taken as yes]")
    old = {"calls": 2, "prompt_tokens": 5, "completion_tokens": 1, "seconds": 1.0}  # before counts
    total = add_usage(old, fell)  # type: ignore[arg-type]
    assert total["calls"] == 2 and total["fallbacks"] == 1 and total["seconds"] == 1.0


def test_the_answer_fallback_is_the_first_line_that_is_not_a_citation():
    assert first_line("Cited: [1, 3]\n**The Pittsburgh Pirates**\nmore") == (
        "The Pittsburgh Pirates", [],
    )  # fmt: skip
    assert first_line("Cited: [2]") == ("unknown", [])
    assert first_line(" ".join(["word"] * 30))[0] == " ".join(["word"] * 12)


def test_choose_chat(no_endpoint, monkeypatch, tmp_path):
    assert choose_chat() is None and choose_chat("none") is None  # auto offline: evidence only
    assert describe(None) == "no LLM: evidence only"
    with pytest.raises(HopgraphError, match="no LLM is configured"):
        choose_chat("endpoint")
    with pytest.raises(HopgraphError, match="unknown LLM choice 'gpt'"):
        choose_chat("gpt")
    monkeypatch.setenv("HOPGRAPH_LLM_GGUF", str(tmp_path / "missing.gguf"))
    with pytest.raises(HopgraphError, match="HOPGRAPH_LLM_GGUF names no file"):
        choose_chat("local")
    monkeypatch.setenv("HOPGRAPH_LLM_MODEL", "m")
    monkeypatch.setenv("HOPGRAPH_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    assert describe(choose_chat()) == "the model m"  # auto: the endpoint once one is set


class FakeLlama:
    """What LocalChatModel uses of llama_cpp.Llama: tokenize and create_chat_completion."""

    def __init__(self):
        self.requests = []

    def tokenize(self, text, add_bos=False):
        return text.split()

    def create_chat_completion(self, **request):
        self.requests.append(request)
        usage = {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}
        return {"choices": [{"message": {"content": "Answer: 1936"}}], "usage": usage}


def test_local_model_reports_usage_and_refuses_a_prompt_longer_than_its_context(tmp_path):
    model = LocalChatModel(model_path=str(tmp_path / "m.gguf"), model_name="tiny", n_ctx=64)
    fake = model._llama = FakeLlama()
    reply = model.invoke("When did military instruction start?")
    assert reply.content == "Answer: 1936" and reply.usage_metadata["output_tokens"] == 2
    assert fake.requests[0]["messages"] == [
        {"role": "user", "content": "When did military instruction start?"}
    ]
    assert fake.requests[0]["temperature"] == 0.0 and fake.requests[0]["max_tokens"] <= 64
    assert model.label == "the local model tiny (llama.cpp, in process, offline)"
    with pytest.raises(HopgraphError, match="does not fit the local model's context of 64"):
        model.invoke("word " * 100)


def test_the_threads_setting_reaches_llama_cpp(tmp_path, monkeypatch):
    monkeypatch.setenv("HOPGRAPH_LLM_GGUF", str(tmp_path / "m.gguf"))
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    assert choose_chat("local")._threads() == {}  # llama.cpp's own default
    monkeypatch.setenv("HOPGRAPH_LLM_THREADS", "1")
    assert choose_chat("local")._threads() == {"n_threads": 1, "n_threads_batch": 1}
    monkeypatch.setenv("HOPGRAPH_LLM_THREADS", "0")
    with pytest.raises(HopgraphError, match="HOPGRAPH_LLM_THREADS"):
        choose_chat("local")


def test_a_file_that_is_no_gguf_is_a_clear_error(tmp_path, monkeypatch):
    bad = tmp_path / "notes.gguf"
    bad.write_text("not a model")
    monkeypatch.setenv("HOPGRAPH_LLM_GGUF", str(bad))
    model = choose_chat("local")
    with pytest.raises(HopgraphError, match="could not be loaded"):
        model.invoke("hello")


def test_ask_without_an_llm_prints_evidence(tmp_path, no_endpoint, capsys):
    index = build_docs_index(tmp_path / "idx", "hashing")
    argv = ["ask", "Where was Larry Alcala educated?", "--index", str(index), "-k", "2"]
    assert main([*argv, "--llm", "none", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["method"] == "gnn_ret"  # gear's own retrieval
    assert len(result["evidence"]) == 2 and "no LLM" in result["llm"]
    sentences = result["answer"]["sentences"]  # the extractive answer: passages' own sentences
    assert sentences and all(
        s["text"] in result["evidence"][s["passage"] - 1]["text"] for s in sentences
    )
    assert all(e["answering"] in e["text"] for e in result["evidence"])
    assert main([*argv, "--method", "bm25"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("answer (the passages' own sentences; no LLM is configured")
    assert "evidence passages (bm25), each with its answering sentence:" in out
    assert "--llm local" in out


def test_answer_report_counts_parse_failures_and_repairs():
    def row(structured, failures, repaired, title):
        usage = no_usage() | {
            "structured": structured, "parse_failures": failures, "repaired": repaired,
            "fallbacks": failures - repaired,
        }  # fmt: skip
        return AnswerRow("m", "q", "?", ["Santo Tomas"], "x", 0.0, 0.0, ["g"], [], [], [],
                         usage, 1.0, evidence_title=title)  # fmt: skip

    scores = summarise("m", [row(4, 2, 1, "University of Santo Tomas"), row(6, 2, 0, "Manila")])
    assert scores.parse_failure_rate == pytest.approx(40.0)  # 4 of 10 first replies
    assert scores.repair_rate == pytest.approx(25.0)  # 1 of those 4
    assert scores.title_f1 == pytest.approx(100 * (2 / 3 + 0) / 2)  # P 2/4, R 1; then 0


def test_an_unreachable_llm_server_is_named_with_the_fix():
    from hopgraph.core.errors import HopgraphError
    from hopgraph.core.llm import LLMSettings, complete, make_chat_model

    settings = LLMSettings(model="m", base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=5)
    with pytest.raises(
        HopgraphError, match=r"cannot reach the LLM server at http://127\.0\.0\.1:9/v1"
    ) as err:
        complete(make_chat_model(settings), "hello")
    assert "HOPGRAPH_LLM_BASE_URL" in str(err.value)
