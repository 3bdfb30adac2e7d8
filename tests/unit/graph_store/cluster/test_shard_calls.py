"""The router's shard calls: a dead or hanging replica's call is sent again; none left, an error."""

import pytest

from hopgraph.core.errors import IndexStateError

ray = pytest.importorskip("ray")
serve_mod = pytest.importorskip("hopgraph.graph_store.cluster.serve")


class Call:
    def __init__(self, outcome):
        self.outcome, self.cancelled = outcome, False

    def result(self, timeout_s):
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome

    def cancel(self):
        self.cancelled = True


class Handle:
    """A deployment handle whose successive calls give ``outcomes`` in turn."""

    def __init__(self, *outcomes):
        self.outcomes, self.calls = list(outcomes), []

    def __getattr__(self, method):
        handle = self

        class Method:
            def remote(self, *args):
                handle.calls.append(Call(handle.outcomes.pop(0)))
                return handle.calls[-1]

        return Method()


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch):
    monkeypatch.setattr(serve_mod.time, "sleep", lambda _: None)


def test_a_call_that_times_out_or_finds_its_replica_dead_is_sent_again():
    hangs = Handle(TimeoutError("60 s"), ray.exceptions.ActorUnavailableError("gone", None), [1])
    sound = Handle([2])
    shards = serve_mod.ServeShards([hangs, sound], ["shard-0", "shard-1"], seconds=0.01)
    assert shards.scatter("top", "q") == [[1], [2]]
    assert shards.retried == 2 and hangs.calls[0].cancelled  # the hung call was let go


def test_a_shard_with_no_replica_left_fails_the_query_naming_it():
    gone = Handle(*[TimeoutError("60 s")] * serve_mod.ATTEMPTS)
    shards = serve_mod.ServeShards([Handle([1]), gone], ["shard-0", "shard-1"], seconds=0.01)
    with pytest.raises(IndexStateError, match=r"shard 1 \(shard-1\) did not answer top after 4"):
        shards.scatter("top", "q")
    assert shards.retried == serve_mod.ATTEMPTS - 1
