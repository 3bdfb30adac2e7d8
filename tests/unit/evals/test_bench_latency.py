"""The latency benchmarks: each method without, then with, the query embedding; sizes in turn."""

import pytest

from hopgraph.evals.bench.__main__ import time_queries
from hopgraph.graph_store.index.reader import Index

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


def test_growth_times_every_size_in_turn_and_reports_each_p95_over_the_first(tmp_path, monkeypatch):
    from hopgraph.evals.bench import scale
    from hopgraph.graph_store.index import writes

    # the index phase hands the writes its vectors; put the encoder back afterwards
    monkeypatch.setattr(writes, "embed_chunks", writes.embed_chunks)
    workdirs = [tmp_path / "small", tmp_path / "large"]
    for size, workdir in zip((200, 400), workdirs, strict=True):
        workdir.mkdir()
        scale.run_phase("index", size, workdir)
        scale.run_phase("graph", size, workdir)
    timed = []
    real = Index.forget_queries
    monkeypatch.setattr(Index, "forget_queries", lambda self, **kw: timed.append(
        len(self.chunks)) or real(self, **kw))  # fmt: skip
    found = scale.growth(workdirs, passes=2)
    small, large = found["sizes"]
    assert (small["chunks"], large["chunks"]) == (200, 400) and found["queries"] == 200
    assert timed.count(200) == timed.count(400) == 2 * 200 * len(scale.GROWTH_METHODS)
    assert timed[:4] == [200, 200, 400, 400] and timed[4:8] == [400, 400, 200, 200]  # turns
    for method in scale.GROWTH_METHODS:
        assert 0 < small[method]["p50"] <= small[method]["p95"]
        assert large["p95_growth"][method] == large[method]["p95"] / small[method]["p95"]
    assert "p95_growth" not in small


def test_growth_names_a_folder_that_is_no_work_folder(tmp_path, capsys):
    from hopgraph.evals.bench import scale

    with pytest.raises(SystemExit) as exit_:
        scale.main(["--growth", str(tmp_path)])
    assert exit_.value.code == 2
    assert "no scale work folder" in capsys.readouterr().err
