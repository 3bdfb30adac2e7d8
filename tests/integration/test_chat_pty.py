"""`hopgraph chat` driven through a pseudo-terminal, with and without an LLM."""

import os
import re
import select
import subprocess
import sys
import time

import pytest

from hopgraph.evals.servers.scripted_llm import ScriptedOpenAIServer
from tests.agent_scripts import QUESTION, cite

pytestmark = pytest.mark.integration


class Terminal:
    """A process on a pseudo-terminal: type lines, read what it printed."""

    def __init__(self, args, env):
        self.master, slave = os.openpty()
        self.proc = subprocess.Popen(
            args, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True
        )
        os.close(slave)
        self.output = ""

    def expect(self, text, count=1, timeout=90):
        """Read until ``text`` has appeared ``count`` times in all output so far."""
        deadline = time.monotonic() + timeout
        while self.output.count(text) < count:
            assert time.monotonic() < deadline, f"no {text!r} in:\n{self.output}"
            ready, _, _ = select.select([self.master], [], [], 0.5)
            if ready:
                try:
                    self.output += os.read(self.master, 65536).decode(errors="replace")
                except OSError:  # the process closed the terminal
                    assert self.output.count(text) >= count, self.output
        return self.output

    def type(self, line):
        os.write(self.master, (line + "\n").encode())

    def close(self):
        self.proc.wait(timeout=30)
        os.close(self.master)
        return self.proc.returncode


def chat_args(index_dir, tmp_path, *extra):
    return [sys.executable, "-m", "hopgraph.cli", "chat", "--index", str(index_dir),
            "--checkpoints", str(tmp_path / "chat.sqlite"), *extra]  # fmt: skip


def reply(prompt):
    if "Standalone question:" in prompt:
        return "Where is the University of Santo Tomas?"
    if "Where is the University" in prompt.rsplit("Question:", 1)[-1]:
        return f"Answer: Manila\nCited: [{cite(prompt, 'University of Santo Tomas')}]"
    return f"Answer: 1936\nCited: [{cite(prompt, 'University of Santo Tomas')}]"


def test_chat_with_an_llm_follow_ups_commands_and_resume(real_docs_index_dir, tmp_path):
    with ScriptedOpenAIServer(lambda prompt, n: (200, reply(prompt))) as server:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HOPGRAPH_CACHE": str(tmp_path / "cache"),
               "HOPGRAPH_LLM_MODEL": "scripted", "HOPGRAPH_LLM_BASE_URL": server.url}  # fmt: skip
        term = Terminal(chat_args(real_docs_index_dir, tmp_path, "--method", "gnn_ret"), env)
        banner = term.expect("you> ")
        thread = re.search(r"thread (\w+)", banner).group(1)
        term.type(QUESTION)
        out = term.expect("you> ", 2)
        assert "· retrieve (gnn_ret)" in out
        assert "hopgraph> 1936 — [1] University of Santo Tomas" in out
        term.type("Where is it?")
        out = term.expect("you> ", 3)
        assert "· as a standalone question: Where is the University of Santo Tomas?" in out
        assert "hopgraph> Manila — [1] University of Santo Tomas" in out
        condense = [r for r in server.requests if "Standalone question:" in r]
        assert len(condense) == 1 and f"User: {QUESTION}" in condense[0]
        for line, shown in [
            ("/sources", "[1] University of Santo Tomas (d2)"),
            ("/trace", "retrieve [node]"),
            ("/method tog2", "method: tog2"),
            ("/method nope", "unknown method 'nope'"),
            ("/new", "new thread"),
        ]:
            term.type(line)
            assert shown in term.expect("you> ", term.output.count("you> ") + 1)
        term.type("/quit")
        assert term.close() == 0
        again = Terminal(chat_args(real_docs_index_dir, tmp_path, "--thread", thread), env)
        assert f"thread {thread}, resuming 4 messages" in again.expect("you> ")
        again.type("/quit")
        assert again.close() == 0


def test_chat_without_an_llm_gives_evidence_only(real_docs_index_dir, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOPGRAPH_LLM", "OPENAI"))}
    env |= {"HF_HUB_OFFLINE": "1", "HOPGRAPH_CACHE": str(tmp_path / "cache")}
    term = Terminal(chat_args(real_docs_index_dir, tmp_path), env)
    assert "no LLM is configured, so answers are evidence passages only" in term.expect("you> ")
    term.type("Where was Larry Alcala educated?")
    out = term.expect("you> ", 2)
    assert "evidence passages (gnn_ret; no LLM, so no written answer)" in out
    assert "Larry Alcala (d1)" in out
    term.type("/quit")
    assert term.close() == 0


def test_ask_on_a_terminal_shows_each_step_before_the_answer(real_docs_index_dir, tmp_path):
    from tests.agent_scripts import NOT_YET, gear_script

    script = gear_script([NOT_YET, "Answerable: Yes\nAnswer: 1936"])
    with ScriptedOpenAIServer(lambda prompt, n: (200, script(prompt))) as server:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HOPGRAPH_CACHE": str(tmp_path / "cache"),
               "HOPGRAPH_LLM_MODEL": "scripted", "HOPGRAPH_LLM_BASE_URL": server.url}  # fmt: skip
        args = [sys.executable, "-m", "hopgraph.cli", "ask", QUESTION, "--method", "gear",
                "--index", str(real_docs_index_dir),
                "--checkpoints", str(tmp_path / "runs.sqlite")]  # fmt: skip
        term = Terminal(args, env)
        out = term.expect("answered by")
        assert term.close() == 0
    first_step = re.search(r"^\[\w+\] ", out, re.MULTILINE)
    assert first_step and first_step.start() < out.index("answer: 1936")
    assert "steps:" not in out  # shown as they happened, not again at the end
