"""`hopgraph sync SOURCE --watch`: keep an index in step with a folder while its files change.

The folder is synced once, then watched (watchfiles): changes that come within the debounce
time of each other are one batch, and each batch is one sync of the whole folder (an edited
include changes the files that include it), so one line and one write per batch. Ctrl-C
stops between writes: a write under way is finished first (a second Ctrl-C interrupts it,
and the write is rolled back as any interrupted write is).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

from hopgraph.core.errors import HopgraphError, InputError
from hopgraph.graph_store.index.changes import SyncReport
from hopgraph.graph_store.stores.manifest import read_manifest

SyncOnce = Callable[[argparse.Namespace, bool], SyncReport]
READY_MS = 500
"""How long the watcher waits before it first reports (an empty batch): then it is watching."""


def watch(args: argparse.Namespace, sync_once: SyncOnce, index: Path) -> None:
    """Sync ``args.source`` into ``index`` now and after every batch of changes, until Ctrl-C."""
    import watchfiles

    root = Path(args.source).resolve()
    if not root.is_dir():
        raise InputError(f"{args.source}: --watch needs a folder", "give the documents' folder")
    stop = threading.Event()
    previous = signal.signal(signal.SIGINT, _stopper(stop))
    try:
        sync_once(args, True)
        # The watcher starts at the first step of the generator and yields an empty batch once
        # it has waited READY_MS: only then is "watching" true; a sync then catches up with
        # any change made before it started.
        changes = watchfiles.watch(
            root,
            watch_filter=_outside(index.resolve()),
            debounce=args.debounce,
            stop_event=stop,
            raise_interrupt=False,
            rust_timeout=READY_MS,
            yield_on_timeout=True,
        )
        ready, number = False, 0
        for batch in changes:
            if not ready:  # the first report: a sync catches up, then the watch is on
                ready = True
                _sync_batch(args, sync_once, index, "caught up", batch, quiet=True)
                hint = "" if args.prune else "; removed files stay indexed: --prune deletes them"
                print(
                    f"watching {root} (changes within {args.debounce} ms are one batch); "
                    f"Ctrl-C stops{hint}",
                    flush=True,
                )
            elif batch:
                number += 1
                _sync_batch(args, sync_once, index, f"batch {number}", batch)
            if stop.is_set():
                break
    finally:
        signal.signal(signal.SIGINT, previous)
    generation = read_manifest(index).generation
    print(f"stopped watching {root}; {index} is at generation {generation}", flush=True)


def _stopper(stop: threading.Event) -> Callable[[int, FrameType | None], None]:
    """Return a SIGINT handler: a first press stops after the write under way, a second now."""

    def handle(_signum: int, _frame: FrameType | None) -> None:
        stop.set()
        print("stopping after the write under way (Ctrl-C again to interrupt it)", flush=True)
        signal.signal(signal.SIGINT, signal.default_int_handler)

    return handle


def _outside(index: Path) -> Callable[[object, str], bool]:
    """Return a watch filter that skips the index's own files and hidden ones."""
    import watchfiles

    default = watchfiles.DefaultFilter()

    def wanted(change: object, path: str) -> bool:
        where = Path(path)
        if where == index or index in where.parents:
            return False
        return default(change, path) and not where.name.startswith(".")

    return wanted


def _sync_batch(
    args: argparse.Namespace,
    sync_once: SyncOnce,
    index: Path,
    label: str,
    batch: set,
    quiet: bool = False,
) -> None:
    """Sync one batch and print its line; a failure is reported and the watch goes on.

    ``quiet``: no line when there was nothing to write.
    """
    started = time.perf_counter()
    before = read_manifest(index).generation
    files = len({path for _, path in batch})
    try:
        report = sync_once(args, False)
    except HopgraphError as err:
        print(f"{label}: {err.message} (index unchanged)", file=sys.stderr, flush=True)
        return
    after = read_manifest(index).generation
    if quiet and after == before:
        return
    written = f"generation {after}" if after == before + 1 else f"generations {before + 1}-{after}"
    print(
        f"{label}: {files} file(s) changed -> {len(report.added)} added, "
        f"{len(report.changed)} changed, {len(report.removed)} removed; "
        f"{written if after > before else 'nothing to write'} "
        f"({time.perf_counter() - started:.1f}s)",
        flush=True,
    )
