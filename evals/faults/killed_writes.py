"""Kill a writer with SIGKILL at many moments; the next writer must find nothing still writing.

``python -m hopgraph.evals.faults.killed_writes [--moments 20] [--docs 3000] [--report FILE]``

For each kind of write (``add``, ``delete``, ``sync`` of a corpus with a quarter of its pages
changed, ``graph``: a graph build, ``triples``: GEAR's triple vectors, ``repair``: `check
--repair` of a lost vector table, ``index``: a rebuild with ``--force``) on a copy of one base
index (hashing embedder, ``--docs`` synthetic pages), the
write runs as `hopgraph` would run it, in its own process, and is killed with ``kill -9`` after
a delay: ``--moments`` delays spread evenly over the time the same write takes unkilled. At
once a second process takes the index's write lock (waiting for it) and holds it; every file
under the index is listed (size and modification time, to the nanosecond) as soon as it holds
the lock and again :data:`WATCH` seconds later. The two lists must be equal: no child of the
killed writer (core.forked) may write on after its lock is free. Then `check` must find the
index sound. The report gives, per kind, the moments tried, those killed mid-write, the files
changed after the lock was taken (0 is the target) and the unsound checks (0).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hopgraph.core.settings import IndexSettings
from hopgraph.graph_store import Document, build_graphs, build_index
from hopgraph.graph_store.index.check import check_index
from hopgraph.graph_store.index.graph_build import GraphSettings
from hopgraph.graph_store.index.repair import repair

KINDS = ("add", "delete", "sync", "graph", "triples", "repair", "index")
WATCH = 2.0
"""Seconds the second writer watches the files after taking the lock."""
HOLD = (
    "import sys, time\nfrom pathlib import Path\n"
    "from hopgraph.graph_store.index.lock import write_lock\n"
    "with write_lock(Path(sys.argv[1]), wait=120):\n"
    "    print('held', flush=True)\n    sys.stdin.readline()\n"
)
WORDS = "river castle county founded museum railway island bishop harbour college festival".split()


def pages(count: int, start: int = 0) -> list[Document]:
    """Return ``count`` synthetic pages that link to each other (titles named in texts)."""
    out = []
    for n in range(start, start + count):
        words = " ".join(WORDS[(n * 7 + i) % len(WORDS)] for i in range(40))
        text = f"Page {n} is about the {words}. It names Page {(n * 13 + 5) % (start + count)}."
        out.append(Document(f"p{n}", f"Page {n}", text))
    return out


def lines(docs: list[Document]) -> str:
    """Return ``docs`` as a JSONL corpus."""
    return "".join(json.dumps({"id": d.id, "title": d.title, "text": d.text}) + "\n" for d in docs)


def base_index(folder: Path, docs: int) -> Path:
    """Build the base index with its graphs (and write the add's pages beside it)."""
    index = folder / "base"
    build_index(pages(docs), index, IndexSettings(model="hashing"), show_progress=False)
    build_graphs(index, GraphSettings(), show_progress=False)
    extra = folder / "extra.jsonl"
    extra.write_text(lines(pages(docs // 4, docs)), encoding="utf-8")
    (folder / "corpus.jsonl").write_text(lines(pages(docs)), encoding="utf-8")
    changed = [Document(d.id, d.title, d.text + " It was renamed.") if n % 4 == 0 else d
               for n, d in enumerate(pages(docs))]  # fmt: skip
    (folder / "changed.jsonl").write_text(lines(changed), encoding="utf-8")
    return index


def command(kind: str, index: Path, folder: Path, docs: int) -> list[str]:
    """Return the `hopgraph` command line of one write of ``kind``."""
    cli = [sys.executable, "-m", "hopgraph"]
    if kind == "add":
        return [*cli, "add", str(folder / "extra.jsonl"), "--index", str(index)]
    if kind == "delete":
        ids = [f"p{n}" for n in range(0, docs, 3)]
        return [*cli, "delete", *ids, "--index", str(index)]
    if kind == "sync":
        return [*cli, "sync", str(folder / "changed.jsonl"), "--index", str(index), "-q"]
    if kind == "graph":
        return [*cli, "graph", "build", "--index", str(index)]
    if kind == "triples":
        return [*cli, "graph", "triples", "--index", str(index), "--quiet"]
    if kind == "repair":
        return [*cli, "check", "--repair", "--index", str(index)]
    return [*cli, "index", str(folder / "corpus.jsonl"), "--index", str(index), "--force",
            "--model", "hashing"]  # fmt: skip


def files(index: Path) -> dict[str, tuple[int, int]]:
    """Return every file under ``index`` with its size and modification time (ns)."""
    out = {}
    for path in index.rglob("*"):
        try:
            stat = path.stat()
        except OSError:  # removed while listed: the listing differs anyway
            continue
        if path.is_file():
            out[str(path.relative_to(index))] = (stat.st_size, stat.st_mtime_ns)
    return out


def trial(kind: str, base: Path, folder: Path, docs: int, delay: float | None) -> dict:
    """Run one write of ``kind`` on a copy of ``base``, killed after ``delay`` s (None: not)."""
    index = folder / f"{kind}-trial"
    shutil.rmtree(index, ignore_errors=True)
    shutil.copytree(base, index)
    if kind == "repair":  # the vector table lost: the repair reads it back from Chroma
        segment = json.loads((index / "manifest.json").read_text())["vectors"][0]
        (index / segment / "vectors.npy").unlink()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HOPGRAPH_WAIT": "0"}
    started = time.monotonic()
    writer = subprocess.Popen(command(kind, index, folder, docs), env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    if delay is None:
        writer.wait()
        return {"seconds": time.monotonic() - started, "exit": writer.returncode}
    time.sleep(delay)
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(index)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env)  # fmt: skip
    assert holder.stdout is not None and holder.stdin is not None
    if holder.stdout.readline().strip() != "held":
        raise SystemExit(f"the second writer could not take the lock of {index}")
    first = files(index)
    time.sleep(WATCH)
    changed = sorted(k for k, v in files(index).items() if first.get(k) != v)
    changed += sorted(set(first) - set(files(index)))
    holder.stdin.write("\n")
    holder.stdin.close()
    holder.wait()
    if kind == "repair":  # the damage it was mending is there until a repair ends: run one
        repair(index)
    problems = [str(p) for p in check_index(index)]
    return {"delay": round(delay, 3), "killed": writer.returncode == -signal.SIGKILL,
            "changed_after_lock": changed, "check": problems}  # fmt: skip


def run(moments: int, docs: int, kinds: tuple[str, ...], folder: Path) -> dict:
    """Return each kind's trials and totals."""
    base = base_index(folder, docs)
    report = {}
    for kind in kinds:
        whole = trial(kind, base, folder, docs, None)
        if whole["exit"] != 0:
            raise SystemExit(f"the {kind} write failed unkilled (exit {whole['exit']})")
        # over the first 60 %: the same write runs faster or slower from run to run (the first,
        # timed one, reads cold files; a local run beside another busy process saw an add of
        # 4.0 s end before a kill at 60 % of it)
        delays = [0.6 * whole["seconds"] * (n + 1) / (moments + 1) for n in range(moments)]
        trials = [trial(kind, base, folder, docs, d) for d in delays]
        report[kind] = {
            "write_seconds": round(whole["seconds"], 2),
            "moments": len(trials),
            "killed": sum(t["killed"] for t in trials),
            "files_changed_after_lock": sum(len(t["changed_after_lock"]) for t in trials),
            "unsound_checks": sum(bool(t["check"]) for t in trials),
            "trials": trials,
        }
        row = report[kind]
        print(f"{kind:<7} write {row['write_seconds']:5.1f} s  moments {row['moments']}  "
              f"killed {row['killed']}  files changed after the lock "
              f"{row['files_changed_after_lock']}  unsound {row['unsound_checks']}",
              flush=True)  # fmt: skip
    return report


def main(argv: list[str] | None = None) -> int:
    """Run the kills, print a line per kind, write the report; exit 1 if any file changed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--moments", type=int, default=20, help="kills per kind of write (20)")
    parser.add_argument("--docs", type=int, default=3000, help="pages of the base index (3000)")
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"writes ({','.join(KINDS)})")
    parser.add_argument("--report", type=Path, help="write the trials here (JSON)")
    parser.add_argument("--update", action="store_true",
                        help="keep the report's other kinds (rerun some kinds only)")  # fmt: skip
    args = parser.parse_args(argv)
    kinds = tuple(k for k in args.kinds.split(",") if k)
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown or args.moments < 1:
        parser.error(f"unknown kinds {unknown}" if unknown else "--moments must be at least 1")
    with tempfile.TemporaryDirectory(prefix="killed-writes-") as tmp:
        report = run(args.moments, args.docs, kinds, Path(tmp))
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        if args.update and args.report.is_file():  # the kinds run now replace theirs only
            report = {**json.loads(args.report.read_text(encoding="utf-8")), **report}
        args.report.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    bad = sum(r["files_changed_after_lock"] + r["unsound_checks"] for r in report.values())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
