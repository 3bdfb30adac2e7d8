"""A tiny OpenAI-compatible chat server on 127.0.0.1 that follows a script and counts requests.

It speaks just enough of ``POST /v1/chat/completions`` for the real ``ChatOpenAI`` client, and can
answer 429, 500, malformed output or nothing at all (a timeout) on chosen requests. The tests
script it per case; run as a program it serves :func:`never_enough`, a model whose replies are
always well-formed and never conclusive, so every agent runs to its loop bound: the worst-case
LLM cost per question, measured with `hopgraph eval --answers` and no real model:

    python -m hopgraph.evals.servers.scripted_llm --port 8765 &
    HOPGRAPH_LLM_MODEL=scripted HOPGRAPH_LLM_BASE_URL=http://127.0.0.1:8765/v1 \
        hopgraph eval --data ../shared/data/musique --methods rgnn_ret,gear,tog2 --answers
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from .json_server import Answer, LocalJSONServer

Reply = tuple[int, str]  # (HTTP status, content)


class ScriptedOpenAIServer(LocalJSONServer):
    """Run with ``with ScriptedOpenAIServer(respond) as server: server.url``."""

    def __init__(self, respond: Callable[[str, int], Reply | float], port: int = 0) -> None:
        """``respond(prompt, n)`` gets the n-th request (from 1) with this prompt.

        It returns (status, content), or a number of seconds to stall before answering 200.
        """
        self.respond = respond
        self.requests: list[str] = []
        self.statuses: list[int] = []
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()
        super().__init__(port)

    def answer(self, body: dict[str, Any]) -> Answer:
        """Follow the script for the request's last message."""
        prompt = body["messages"][-1]["content"]
        with self._lock:
            self.requests.append(prompt)
            self._seen[prompt] = n = self._seen.get(prompt, 0) + 1
        action = self.respond(prompt, n)
        if isinstance(action, int | float) and not isinstance(action, bool):
            time.sleep(action)
            action = self.respond(prompt, 10**6)  # then answer normally
        status, content = action
        with self._lock:
            self.statuses.append(status)
        headers = {"Retry-After": "0"} if status == 429 else {}
        if status != 200:
            return status, {"error": {"message": content, "type": "test", "code": status}}, headers
        return 200, completion(body.get("model", "test"), prompt, content), headers


def completion(model: str, prompt: str, content: str) -> dict[str, Any]:
    """Return a chat completion carrying ``content``, with usage counted from the lengths."""
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": content},
            }
        ],
        "usage": {
            "prompt_tokens": len(prompt) // 4,
            "completion_tokens": len(content) // 4,
            "total_tokens": (len(prompt) + len(content)) // 4,
        },
    }


def never_enough(prompt: str) -> str:
    """Reply to any hopgraph prompt in its format, never concluding (see the module docstring)."""
    question = re.findall(r"Question:\s*(.+)", prompt)
    asked = question[-1].strip() if question else "the question"
    if "ask the next step question" in prompt:  # RGNN-Ret
        return f"Next step: {asked}"
    if "critique whether" in prompt:
        return "The intermediate answers are not enough. Critique: no"
    if "answer the next step question" in prompt:
        return "The snippets do not say."
    if "find facts that help answer" in prompt:  # GEAR and SyncGE
        titles = re.findall(r"Document: (.+)", prompt)[:2]
        return ", ".join(f'("{t}", "is mentioned in", "the documents")' for t in titles)
    if "Answerable: Yes" in prompt:
        return "Answerable: No\nWhy: the facts do not contain the answer."
    if "Next Question:" in prompt:
        return f"Next Question: {asked}"
    if "starting points for reasoning" in prompt:  # ToG-2
        offered = re.findall(r"Topic entities: (\{.*\})", prompt)
        return f"Output: {offered[-1] if offered else '{}'}"
    if "Available Relations" in prompt:
        return _first_relations(prompt)
    if "sufficient to formulate an answer" in prompt:
        return "{No} Nothing conclusive yet. The useful information for now is {nothing yet}"
    if "provide a suitable query" in prompt:
        return f"{{{asked}}}"
    if "reading comprehension" in prompt:  # every method's reader
        return "Answer: unknown\nCited: [1]"
    return "[]"


def offered_relations(prompt: str) -> list[tuple[str, list[str]]]:
    """Read ToG-2's relation-prune prompt: (entity, its numbered relations) for the new question."""
    new = prompt.rsplit("# Now the new question:", 1)[-1]
    offered = []
    for block in re.split(r"\nEntity \d+: ", new)[1:]:
        name, _, listed = block.partition("\nAvailable Relations:\n")
        offered.append((name, re.findall(r"^\d+\. (.+)$", listed, re.MULTILINE)))
    return offered


def relation_reply(chosen: list[tuple[str, str]], score: float) -> str:
    """Write ToG-2's relation-prune reply choosing one relation per entity."""
    lines = ["Answer:"]
    for n, (name, label) in enumerate(chosen, start=1):
        lines += [f"Entity {n}: {name}", f"1. {{{label} (Score: {score:g})}}: chosen."]
    return "\n".join(lines)


def _first_relations(prompt: str) -> str:
    """Choose the first offered relation of every entity."""
    chosen = [(name, labels[0]) for name, labels in offered_relations(prompt) if labels]
    return relation_reply(chosen, 5)


def main(argv: list[str] | None = None) -> int:
    """Serve :func:`never_enough` on 127.0.0.1 until interrupted."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m hopgraph.evals.servers.scripted_llm", description=__doc__
    )
    parser.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (default 8765)")
    args = parser.parse_args(argv)
    with ScriptedOpenAIServer(lambda prompt, n: (200, never_enough(prompt)), args.port) as server:
        print(f"serving a scripted model at {server.url} (Ctrl-C stops)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
