"""`langgraph dev` over langgraph.json: threads, streamed runs and state over HTTP."""

import json
import os
import shutil
import socket
import subprocess
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_sync_client

from hopgraph.evals.servers.scripted_llm import ScriptedOpenAIServer
from tests.agent_scripts import NOT_YET, QUESTION, cite, gear_script
from tests.integration.conftest import wait_until_up

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
LANGGRAPH = shutil.which("langgraph")


TOKEN = "lg-s3cret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
GEAR = gear_script([NOT_YET, "Answerable: Yes\nAnswer: 1936"])


def reply(prompt):
    if "reading comprehension" in prompt and "Larry" not in prompt.rsplit("Question:", 1)[-1]:
        return f"Answer: Manila\nCited: [{cite(prompt, 'Manila')}]"
    return GEAR(prompt)


@contextmanager
def langgraph_dev(index_dir, tmp_path, llm_url=None, extra=None):
    """Run `langgraph dev` on a free port (with the scripted LLM at ``llm_url``, else none).

    ``extra``: more environment variables for the server (e.g. HOPGRAPH_SHARDS).
    """
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOPGRAPH_LLM", "OPENAI"))}
    env |= {
        "HF_HUB_OFFLINE": "1",
        "HOPGRAPH_INDEX": str(index_dir),
        "HOPGRAPH_CACHE": str(tmp_path / "cache"),
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "HOPGRAPH_TOKEN": TOKEN,
    }
    if llm_url:
        env |= {"HOPGRAPH_LLM_MODEL": "scripted", "HOPGRAPH_LLM_BASE_URL": llm_url}
    env |= extra or {}
    env.pop("LANGSMITH_TRACING", None)
    process = subprocess.Popen(
        [LANGGRAPH, "dev", "--no-browser", "--no-reload", "--port", str(port),
         "--config", str(ROOT / "langgraph.json")],
        # the server keeps its runtime state (.langgraph_api/) in its working directory
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(
            lambda: httpx.get(f"{url}/ok", timeout=2, headers=AUTH).status_code == 200,
            process, "the LangGraph server", lambda: process.stdout.read(), timeout=180,
        )  # fmt: skip
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture
def server(real_docs_index_dir, tmp_path):
    with (
        ScriptedOpenAIServer(lambda prompt, n: (200, reply(prompt))) as llm,
        langgraph_dev(real_docs_index_dir, tmp_path, llm.url) as url,
    ):
        yield url


@pytest.mark.skipif(LANGGRAPH is None, reason="needs langgraph-cli[inmem] (the test extra)")
def test_agents_and_chat_over_the_langgraph_server(server):
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        refused = httpx.post(f"{server}/assistants/search", json={}, headers=headers, timeout=10)
        assert refused.status_code == 401, refused.text
    # DNS rebinding: a page that rebinds its name to 127.0.0.1 is refused, token or not
    for headers, status in [
        ({"Host": "evil.example"}, 421),
        ({"Origin": "https://evil.example"}, 403),
    ]:
        forged = httpx.post(
            f"{server}/assistants/search", json={}, headers={**AUTH, **headers}, timeout=10
        )
        assert forged.status_code == status, forged.text
    # the API's description is behind the token too
    assert httpx.get(f"{server}/openapi.json", timeout=10).status_code == 401
    assert httpx.get(f"{server}/openapi.json", headers=AUTH, timeout=10).status_code == 200
    client = get_sync_client(url=server, headers=AUTH)
    assert {a["graph_id"] for a in client.assistants.search()} == {
        "chat", "gear", "rgnn_ret", "tog2",
    }  # fmt: skip
    thread = client.threads.create()
    stream = client.runs.stream(
        thread["thread_id"],
        "gear",
        input={"question": QUESTION},
        stream_mode="updates",
        stream_subgraphs=True,
    )
    nodes = [next(iter(c.data)) for c in stream if c.event.startswith("updates|")]
    assert nodes[:3] == ["retrieve", "read", "reason"] and nodes[-1] == "answer"
    state = client.threads.get_state(thread["thread_id"])["values"]
    assert state["answer"] == "1936" and [c["id"] for c in state["citations"]] == ["d2"]
    assert state["usage"]["calls"] == 8
    chat = client.threads.create()
    client.runs.wait(
        chat["thread_id"], "chat", context={"method": "gnn_ret", "preset": "paper"},
        input={"messages": [{"role": "user", "content": "Where is Manila the capital of?"}]},
    )  # fmt: skip
    messages = client.threads.get_state(chat["thread_id"])["values"]["messages"]
    assert [m["type"] for m in messages] == ["human", "ai"]
    assert messages[-1]["content"] == "Manila — [1] Manila"
    # an index the server does not serve is refused before the run starts
    bad = client.threads.create()
    run = {"assistant_id": "gear", "input": {"question": QUESTION}, "context": {"index": "/etc"}}
    refused = httpx.post(
        f"{server}/threads/{bad['thread_id']}/runs/wait", json=run, headers=AUTH, timeout=30
    )
    assert refused.status_code == 403 and "not one this server serves" in refused.text
    assert "/" not in refused.json()["detail"].split("(it serves")[1]  # names, not paths
    # a relative path is resolved (off the event loop) and refused the same way, not a 500
    run["context"] = {"index": "some/relative/index"}
    relative = httpx.post(
        f"{server}/threads/{bad['thread_id']}/runs/wait", json=run, headers=AUTH, timeout=30
    )
    assert relative.status_code == 403, relative.text


@pytest.mark.skipif(LANGGRAPH is None, reason="needs langgraph-cli[inmem] (the test extra)")
def test_without_an_llm_chat_answers_with_evidence_and_schemas_are_published(
    real_docs_index_dir, tmp_path
):
    index_dir = tmp_path / "idx"  # a copy: the end of the test damages it
    shutil.copytree(real_docs_index_dir, index_dir, ignore=shutil.ignore_patterns(".lock"))
    with langgraph_dev(index_dir, tmp_path) as url:
        client = get_sync_client(url=url, headers=AUTH)
        assistants = {a["graph_id"]: a["assistant_id"] for a in client.assistants.search()}
        for graph, fields in [("chat", {"messages"}), ("gear", {"question"})]:
            schemas = client.assistants.get_schemas(assistants[graph])
            assert fields <= set(schemas["input_schema"]["properties"]), graph
            context = set(schemas["context_schema"]["properties"])
            assert {"index", "method", "k", "where"} <= context, graph
        thread = client.threads.create()
        client.runs.wait(
            thread["thread_id"], "chat", context={"method": "gnn_ret", "k": 2},
            input={"messages": [{"role": "user", "content": QUESTION}]},
        )  # fmt: skip
        values = client.threads.get_state(thread["thread_id"])["values"]
        said = values["messages"][-1]["content"]
        assert said.startswith("answer (the passages' own sentences; no LLM is configured):\n[")
        assert "evidence passages (gnn_ret), each with its answering sentence:" in said
        assert "[1] " in said and "[2] " in said and len(values["sources"]) == 2
        for source in values["sources"]:  # each with its hit's metadata
            assert {"source", "section", "position", "chunks"} <= set(source["metadata"])
        # bad input and a damaged index: the run fails with the CLI's words and no server path
        said = chat_error(url, {"k": "²"}, QUESTION)
        assert "context.k must be a whole number from 1 to 50: expected a whole number" in said
        assert "a server takes 10,000" in chat_error(url, {}, "why " * 2_600)
        graph = json.loads((index_dir / "manifest.json").read_text())["files"]["graph"]
        table = index_dir / graph / "extractions.npz"  # IIER's first read: not loaded yet
        table.write_bytes(table.read_bytes()[:-9] + b"not a zip")  # same size: a byte flipped
        said = chat_error(url, {"method": "iier"}, QUESTION)
        assert "idx/g0" in said and "`hopgraph graph build --index idx`" in said, said
        assert str(tmp_path) not in said


def chat_error(url, context, question):
    """Run the chat graph once; return the error the server reports for it."""
    client = get_sync_client(url=url, headers=AUTH)
    thread = client.threads.create()
    run = {"assistant_id": "chat", "context": context,
           "input": {"messages": [{"role": "user", "content": question}]}}  # fmt: skip
    reply = httpx.post(
        f"{url}/threads/{thread['thread_id']}/runs/wait", json=run, headers=AUTH, timeout=120
    )
    return json.dumps(reply.json())
