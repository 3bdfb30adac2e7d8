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


class FakeServe:
    """Serve's run_many / status / delete, each application's states given in turn."""

    def __init__(self, states: dict[str, list[tuple[str, str]]]) -> None:
        self.states, self.deleted = states, []

    def run_many(self, targets, wait_for_applications_running):
        assert not wait_for_applications_running  # the wait is ours, with its deadline
        return [f"handle-{t.name}" for t in targets]

    def status(self):
        from types import SimpleNamespace

        apps = {}
        for name, steps in self.states.items():
            status, message = steps.pop(0) if len(steps) > 1 else steps[0]
            apps[name] = SimpleNamespace(status=status, message=message)
        return SimpleNamespace(applications=apps)

    def delete(self, name, _blocking=True):
        self.deleted.append(name)


def _targets(*names):
    from types import SimpleNamespace

    return [SimpleNamespace(name=n) for n in names]


def test_shards_start_together_and_their_handles_come_once_all_run(monkeypatch):
    fake = FakeServe({"a": [("DEPLOYING", ""), ("RUNNING", "")], "b": [("RUNNING", "")]})
    monkeypatch.setattr(ray.serve, "run_many", fake.run_many)
    monkeypatch.setattr(ray.serve, "status", fake.status)
    assert serve_mod.started(_targets("a", "b"), 1) == ["handle-a", "handle-b"]
    assert fake.deleted == []


def test_shards_that_find_no_place_are_removed_and_named_with_what_to_free(monkeypatch):
    fake = FakeServe({"a": [("RUNNING", "")], "b": [("DEPLOYING", "")]})
    for name in ("run_many", "status", "delete"):
        monkeypatch.setattr(ray.serve, name, getattr(fake, name))
    with pytest.raises(IndexStateError, match=r"did not start within 0\.3 s") as err:
        serve_mod.started(_targets("a", "b"), 2, seconds=0.3)
    assert "--replicas" in (err.value.hint or "") and sorted(fake.deleted) == ["a", "b"]


def test_a_shard_that_fails_to_start_says_why(monkeypatch):
    said = "Traceback ...\nIndexStateError: /idx/manifest.json is missing"
    fake = FakeServe({"a": [("DEPLOY_FAILED", said)]})
    for name in ("run_many", "status", "delete"):
        monkeypatch.setattr(ray.serve, name, getattr(fake, name))
    with pytest.raises(IndexStateError, match=r"manifest\.json is missing") as err:
        serve_mod.started(_targets("a"), 1)
    assert "shared file system" in (err.value.hint or "") and fake.deleted == ["a"]
