r"""A small OpenAI-compatible embeddings server on 127.0.0.1, backed by one of hopgraph's models.

It serves ``POST /v1/embeddings`` (``{"model", "input"}`` → ``{"data": [{"embedding"}]}``) as
OpenAI, Ollama, TEI and vLLM do, counts requests and texts, and can be told to fail: answer a
status code, or vectors of another size. The tests start it to check hopgraph's endpoint client;
run as a program it lets you try ``--embeddings-url`` without another server:

    python -m hopgraph.evals.servers.embedding_server --model all-MiniLM-L6-v2 --port 8081 &
    hopgraph index ./docs --index idx --model all-MiniLM-L6-v2 \
        --embeddings-url http://127.0.0.1:8081/v1
"""

from __future__ import annotations

import argparse
import contextlib
import threading
from typing import Any

import numpy as np

from hopgraph.graph_store.embedding.embedders import load_embedder

from .json_server import Answer, LocalJSONServer


class EmbeddingServer(LocalJSONServer):
    """Run with ``with EmbeddingServer("hashing") as server: server.url``."""

    def __init__(self, model: str, port: int = 0, served_as: str | None = None) -> None:
        """Serve ``model``'s vectors under the name ``served_as`` (default: the model's)."""
        self.embedder = load_embedder(model)
        self.name = served_as or model
        self.requests = 0
        self.texts = 0
        self.fail_with: int | None = None
        """An HTTP status to answer requests with (None: answer)."""
        self.failures_left: int | None = None
        """How many requests get ``fail_with`` before it answers again (None: all of them)."""
        self.dimension: int | None = None
        """Cut the vectors to this many dimensions (another model's, for the tests)."""
        self.scale: np.ndarray | None = None
        """Multiply the vectors by this (a different model of the same size)."""
        self._lock = threading.Lock()
        super().__init__(port)

    def answer(self, body: dict[str, Any]) -> Answer:
        """Return the status, JSON and headers for one request."""
        with self._lock:
            self.requests += 1
            failing = self.fail_with is not None and self.failures_left != 0
            if failing and self.failures_left is not None:
                self.failures_left -= 1
        if failing:
            return self.fail_with or 500, {"error": {"message": "failing on purpose"}}, {}
        if body.get("model") != self.name:
            return 404, {"error": {"message": f"model {body.get('model')!r} not found"}}, {}
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        with self._lock:
            self.texts += len(texts)
        vectors = self.embedder.embed([str(t) for t in texts])
        if self.scale is not None:
            vectors = vectors * self.scale[: vectors.shape[1]]
        if self.dimension is not None:
            vectors = vectors[:, : self.dimension]
        data = [
            {"object": "embedding", "index": i, "embedding": v.tolist()}
            for i, v in enumerate(vectors)
        ]
        usage = {"prompt_tokens": 0, "total_tokens": 0}
        return 200, {"object": "list", "model": self.name, "data": data, "usage": usage}, {}


def main(argv: list[str] | None = None) -> int:
    """Serve until Ctrl-C."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="all-MiniLM-L6-v2", help="the model to serve")
    parser.add_argument("--port", type=int, default=8081, help="port on 127.0.0.1 (8081)")
    args = parser.parse_args(argv)
    with EmbeddingServer(args.model, args.port) as server:
        print(f"serving {args.model} at {server.url}/embeddings (Ctrl-C stops)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
