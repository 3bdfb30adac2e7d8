"""LangSmith tracing follows its standard variables: on with them, off without."""

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


class FakeLangSmith:
    """An HTTP endpoint that accepts whatever the LangSmith client sends, and keeps it."""

    def __init__(self):
        self.bodies: list[bytes] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _ok(self):
                length = int(self.headers.get("Content-Length") or 0)
                outer.bodies.append(self.rfile.read(length) if length else b"")
                data = json.dumps({}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = _ok

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


RUN = """
import sys
from langchain_core.tracers.langchain import wait_for_all_tracers
from hopgraph.agents.run import run_agent
from hopgraph.graph_store import Index
from tests.agent_scripts import QUESTION, rgnn_script
from tests.fakes import ScriptedChatModel
with Index.open(sys.argv[1]) as index:
    chat = ScriptedChatModel(respond=rgnn_script(["Critique: yes"]))
    print(run_agent("rgnn_ret", QUESTION, index, chat).answer)
wait_for_all_tracers()
"""


def run_in_fresh_process(index_dir, env):
    """Run one agent in a new Python, as a user would, with ``env``."""
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(index_dir)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1936"


def test_langsmith_receives_runs_only_when_its_variables_are_set(docs_index):
    fake = FakeLangSmith()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LANGSMITH", "LANGCHAIN"))}
    base |= {"HF_HUB_OFFLINE": "1", "LANGSMITH_ENDPOINT": fake.url}
    run_in_fresh_process(docs_index.directory, base)
    assert not any(b"ask_next_step" in b for b in fake.bodies)  # off without the variables
    run_in_fresh_process(
        docs_index.directory, base | {"LANGSMITH_TRACING": "true", "LANGSMITH_API_KEY": "k"}
    )
    sent = b"".join(fake.bodies)
    assert b"ask_next_step" in sent and b"critique" in sent
    fake.server.shutdown()
