"""The ``hopgraph`` command: parse, configure, run the command, and turn errors into exit codes."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from hopgraph.core.config import configure
from hopgraph.core.errors import DiskFullError, HopgraphError, disk_full, disk_full_error

from .parser import build_parser


def _diagnose(args: argparse.Namespace | None) -> str | None:
    """Say what `hopgraph check` finds wrong with the command's index, or ``None``."""
    if args is None or not hasattr(args, "index"):
        return None
    from hopgraph.graph_store.index.check import check_index
    from hopgraph.graph_store.stores.manifest import MANIFEST

    from .options import index_dir

    directory = index_dir(args)
    if not (directory / MANIFEST).exists():
        return None
    try:
        problems = check_index(directory)
    except Exception:  # the check itself failed: show the original error's traceback
        return None
    if not problems:
        return None
    return f"{directory} is damaged:\n" + "\n".join(str(p) for p in problems)


def _as_disk_full(err: Exception, args: argparse.Namespace | None) -> DiskFullError | None:
    """Return a full device's error when ``err`` is one, else ``None``.

    A write undone on a full device says so itself (Generation); a failure outside one (a
    lock file, an --out file) is named here.
    """
    if not disk_full(err):
        return None
    from .options import index_dir

    named = getattr(err, "filename", None)  # an --out file: its device, not the index's
    if named:
        where = Path(named).parent
    else:
        where = index_dir(args) if args is not None and hasattr(args, "index") else Path.cwd()
    return disk_full_error(where, committed=None)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status (0 ok, 2 bad input or state, 130 interrupted)."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    args = None
    exporting = None
    try:
        args = build_parser().parse_args(argv)  # help texts may read settings: inside the try
        exporting = _spans_exported()
        # The run's flags over the settings file and HOPGRAPH_* (hopgraph.core.settings).
        configure(
            args.config,
            index=getattr(args, "index", None),
            device=getattr(args, "device", None),
            embed_processes=getattr(args, "processes", None),
            llm=getattr(args, "llm", None),
            wait=getattr(args, "wait", None),
        )
        return args.func(args) or 0
    except HopgraphError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: nothing was changed by the unfinished step", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `hopgraph retrieve ... | head`
        return 0
    except Exception as err:
        # A damaged index fails in its file's own library (zip, JSON, Chroma): say which file
        # and how to repair it. Anything else is a bug, and its traceback is shown.
        full = _as_disk_full(err, args)
        if full is not None:  # not damage: a check would only find the device full too
            print(f"error: {full}", file=sys.stderr)
            return 2
        diagnosis = _diagnose(args)
        if diagnosis is None:
            raise
        print(f"error: reading the index failed ({type(err).__name__}: {err})", file=sys.stderr)
        print(diagnosis, file=sys.stderr)
        return 2
    finally:
        configure()  # a caller that goes on in this process (tests, scripts) starts clean
        if exporting is not None:
            exporting()  # the spans still queued are sent before the process ends


def _spans_exported() -> Callable[[], None] | None:
    """Export this command's spans over OTLP when OTLP's variables are set (tools.shared.spans)."""
    if not any(name.startswith("OTEL_EXPORTER_OTLP") for name in os.environ):
        return None  # not even the module is imported: a start pays nothing
    from hopgraph.tools.shared.spans import export_from_env

    return export_from_env()
