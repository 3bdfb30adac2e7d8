"""Work done beside a write while the write goes on: two cores busy during a write.

A write at a million chunks is mostly single-threaded Python and numpy. Parts of it that only
write files (the knowledge graph, the chunk and document tables, BM25, merged vector segments)
or give back a few arrays (the semantic neighbours) run in a forked child: it inherits the data
instead of receiving it. Where fork is not there, the work runs in place, at once. (Not in a
thread: Chroma's writes hold the GIL, and numpy releases it only in its larger kernels.) A child
dies with its parent (:func:`die_with_parent`): none writes on after the write's lock is free.
"""

from __future__ import annotations

import ctypes
import os
import signal
from collections.abc import Callable
from multiprocessing import get_all_start_methods, get_context
from multiprocessing.connection import Connection
from typing import Any, Generic, TypeVar

from hopgraph.core.errors import HopgraphError, IndexStateError

T = TypeVar("T")


class Forked(Generic[T]):
    """``work()`` run in a forked child (or here, when ``in_child`` is false or fork is not there).

    :meth:`result` waits for it and returns its (small, picklable) value; a failure in the child
    is raised there: a hopgraph error as itself, anything else as an :class:`IndexStateError`
    saying ``what`` failed.
    """

    def __init__(self, what: str, work: Callable[[], T], in_child: bool = True) -> None:
        self.what = what
        self._child = None
        self._error: Exception | None = None
        if not in_child or "fork" not in get_all_start_methods():
            self._value = work()
            return
        context = get_context("fork")
        self._reply, sender = context.Pipe(duplex=False)
        parent = os.getpid()
        self._child = context.Process(target=_run, args=(sender, work, parent), daemon=True)
        self._child.start()
        sender.close()

    def __enter__(self) -> Forked[T]:
        return self

    def __exit__(self, *_: object) -> None:
        """Wait for the child if its result was not taken (a write failed): none outlives it."""
        if self._child is not None and self._child.is_alive():
            self._child.join()

    def result(self, limit: float | None = None) -> T:
        """Wait for the work; return its value or raise its error (the same on a second call).

        ``limit``: seconds to wait at most; a child still at work then is killed and the
        error says so (a native library that spins on a damaged file never returns).
        """
        if self._child is not None:
            try:
                if limit is not None and not self._reply.poll(limit):
                    self._child.kill()
                    kind, payload = "failed", f"it took over {limit:.0f} s and was stopped"
                else:
                    kind, payload = self._reply.recv()
            except EOFError:
                kind, payload = "failed", f"its process died (exit code {self._child.exitcode})"
            finally:
                self._reply.close()
            self._child.join()
            self._child, self._value, self._error = None, payload if kind == "ok" else None, None
            if kind == "hopgraph":
                error_type, message, hint = payload
                self._error = error_type(message, hint)
            elif kind != "ok":
                self._error = IndexStateError(f"{self.what} failed: {payload}")
        if self._error is not None:
            raise self._error
        return self._value


def _run(sender: Connection, work: Callable[[], Any], parent: int) -> None:
    """In the child: do the work, send back its value or its error.

    One BLAS thread: the child shares the cores with the write, and a second thread of its
    matrix products would only take turns with the parent.
    """
    die_with_parent(parent)
    from threadpoolctl import threadpool_limits  # in the child: the parent never needs it

    try:
        with threadpool_limits(1):
            value = work()
        sender.send(("ok", value))
    except HopgraphError as err:
        sender.send(("hopgraph", (type(err), err.message, err.hint)))
    except Exception as err:  # the parent raises it, with its message
        sender.send(("failed", f"{type(err).__name__}: {err}"))
    finally:
        sender.close()


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(parent: int) -> None:
    """Have the kernel kill this child when its parent dies (Linux's parent-death signal).

    The parent holds the index's write lock; killed (``kill -9``), it frees the lock, and a
    child still writing the write's files would then overlap the next writer. The request is
    made first thing; a parent already gone by then is caught by the check after it. Where
    prctl is not there (not Linux), the child outlives its parent as before.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL) != 0:
            return
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:
        os._exit(1)  # the parent died before the request was made
