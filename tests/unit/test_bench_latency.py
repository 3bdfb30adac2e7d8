"""The latency benchmark times each method without, then with, the query's embedding."""

from hopgraph.evals.bench.__main__ import time_queries
from hopgraph.graph_store.index import Index

QUESTIONS = ["Where was Larry Alcala educated?", "Which county seat is Stanley?"]


def test_with_the_embedding_every_call_embeds_its_question(docs_index, monkeypatch):
    calls = []
    embed = Index.embed_query

    def counted(self, text):
        calls.append(text in self._query_vectors)  # True: served from the cache
        return embed(self, text)

    monkeypatch.setattr(Index, "embed_query", counted)
    shared = time_queries(docs_index.directory, QUESTIONS, 3, ["dense", "gnn_ret"])
    assert set(shared) == {"query embedding", "dense", "gnn_ret"}
    assert calls.count(False) == len(QUESTIONS)  # embedded once up front, cached after
    calls.clear()
    alone = time_queries(docs_index.directory, QUESTIONS, 3, ["dense", "gnn_ret"], embedded=True)
    assert set(alone) == {"dense", "gnn_ret"}
    for timed in alone.values():
        assert timed["queries"] == len(QUESTIONS) and timed["p95_ms"] >= timed["p50_ms"]
    timed_calls = [c for c in calls if c is False]
    assert len(timed_calls) >= 2 * 3 * len(QUESTIONS)  # every timed call embedded its question
