"""The pool a query's side work runs in."""

import os
import threading

import pytest

from hopgraph.core.threads import beside


def test_work_runs_in_another_thread_and_its_failure_reaches_the_caller():
    assert beside(threading.get_ident).result() != threading.get_ident()
    assert beside(sum, [1, 2, 3]).result() == 6
    with pytest.raises(ZeroDivisionError):
        beside(divmod, 1, 0).result()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_gets_a_pool_of_its_own():
    beside(int).result()  # the parent's pool has its threads now
    child = os.fork()
    if child == 0:  # the child inherits the pool object, none of its threads
        code = 1
        try:
            code = 0 if beside(sum, [2, 3]).result(timeout=10) == 5 else 1
        finally:
            os._exit(code)  # never back into pytest
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_childs_result_or_error_is_the_same_when_asked_again():
    from hopgraph.core.errors import IndexStateError
    from hopgraph.core.forked import Forked

    done = Forked("adding", lambda: os.getpid())
    assert done.result() == done.result() != os.getpid()  # a write's graphs wait on it first
    failed = Forked("dividing", lambda: 1 // 0)
    for _ in range(2):
        with pytest.raises(IndexStateError, match="dividing failed"):
            failed.result()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_past_its_limit_is_stopped_and_named():
    import time

    from hopgraph.core.errors import IndexStateError
    from hopgraph.core.forked import Forked

    spinning = Forked("reading Chroma", lambda: time.sleep(600))
    child = spinning._child
    started = time.monotonic()
    with pytest.raises(IndexStateError, match="reading Chroma failed: it took over 0 s"):
        spinning.result(0.2)
    assert time.monotonic() - started < 30  # not the child's ten minutes
    assert not child.is_alive()
    quick = Forked("adding", lambda: 2 + 3)
    assert quick.result(60) == 5
