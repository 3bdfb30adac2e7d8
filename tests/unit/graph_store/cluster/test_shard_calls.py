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


def test_a_shard_found_gone_is_deployed_again_and_answers(caplog):
    from ray.serve.exceptions import DeploymentUnavailableError

    gone = Handle(DeploymentUnavailableError("shard-1"))
    again = Handle([2])
    deployed = []

    def deploy(number):
        deployed.append(number)
        return again

    shards = serve_mod.ServeShards([Handle([1]), gone], ["shard-0", "shard-1"], deploy=deploy)
    with caplog.at_level("WARNING"):
        assert shards.scatter("top", "q") == [[1], [2]]
    assert deployed == [1] and shards.redeployed == 1 and shards.retried == 0
    assert shards.handles[1] is again  # later calls go to the new deployment
    assert "shard 1 (shard-1) was gone (DeploymentUnavailableError): deployed it" in caplog.text


def test_a_shard_gone_with_nothing_to_deploy_it_again_fails_naming_it():
    from ray.serve.exceptions import DeploymentUnavailableError

    gone = Handle(*[DeploymentUnavailableError("shard-0")] * serve_mod.ATTEMPTS)
    shards = serve_mod.ServeShards([gone], ["shard-0"], seconds=0.01)
    with pytest.raises(IndexStateError, match=r"shard 0 \(shard-0\) did not answer"):
        shards.scatter("top", "q")


def test_an_application_name_carries_its_index_generation_shard_and_owner(tmp_path):
    name = serve_mod.app_name(tmp_path, 7, 2, "1a2b3c4d")
    match = serve_mod.APP.match(name)
    assert match is not None
    assert match["key"] == serve_mod.index_key(tmp_path)
    assert (match["generation"], match["number"], match["owner"]) == ("7", "2", "1a2b3c4d")
    assert serve_mod.APP.match("hopgraph-1234abcd-g7-shard-2") is None  # no owner: not ours
