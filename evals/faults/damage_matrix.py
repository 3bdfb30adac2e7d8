"""Damage every file of a graph-built index in turn; `check` must name it, `--repair` mend it.

``python -m hopgraph.evals.faults.damage_matrix [--model hashing] [--report FILE]``

The index: the sample pages (tests' DOCS) with their graphs and triple vectors. For every file
under it (the lock aside), each damage on a fresh copy: truncated to half, deleted, one byte
flipped in its middle, 4 kB zeroed in its middle, 1 MiB appended, a symbolic link to /dev/zero
or to a folder in its place, and its read permission taken away (root runs the matrix without
the capabilities that let it read any file: setpriv drops them). Then, on the index after one
more `add` (three generations), every pair of same-size files of two generations, one of them
the current one's, swapped. First every method answers every question as the undamaged index does
or refuses with the damage named (a different answer is "served wrong", an error that is not
hopgraph's a "traceback"); then `check` must name at least one problem, and `check --repair`
either mends it (after which `check` is sound and dense, hybrid, gnn_ret and naive_ge give the
undamaged index's top 5 for every question, ids and scores) or refuses, naming the damage and
the documents to index again. The report counts each outcome, with the reasons of refusals, and
the slowest `check` and the run's peak memory (issue 73: under 30 s and 1 GB).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from hopgraph.core.errors import HopgraphError
from hopgraph.core.settings import IndexSettings
from hopgraph.graph_store import (
    Document,
    Index,
    add_documents,
    build_graphs,
    build_index,
    load_documents,
)
from hopgraph.graph_store.index.check import check_index
from hopgraph.graph_store.index.graph_build import GraphSettings
from hopgraph.graph_store.index.repair import repair
from hopgraph.tools import make_retriever

METHODS = ("dense", "hybrid", "gnn_ret", "naive_ge")
DAMAGES = (
    "truncate",
    "delete",
    "flip",
    "zero4k",
    "append1m",
    "link_zero",
    "link_dir",
    "unreadable",
)
SAMPLE = Path(__file__).resolve().parents[2] / "hopgraph" / "sample"
EXTRA = {"id": "extra", "title": "Extra", "text": "The keeper of the lighthouse of Alexandria."}
# CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH: what lets root read a file whose mode says no
DAC_CAPS = "-dac_override,-dac_read_search"


def build(folder: Path, model: str) -> Path:
    """Build the undamaged index: the sample pages, graphs, triple vectors (GEAR's first use)."""
    index = folder / "idx"
    docs = load_documents(SAMPLE / "corpus.jsonl")
    build_index(docs, index, IndexSettings(model=model), show_progress=False)
    build_graphs(index, GraphSettings(embed_triples=True), show_progress=False)
    return index


def three_generations(base: Path, folder: Path) -> Path:
    """Return a copy of ``base`` after one more `add`: older generations' files beside it."""
    index = folder / "idx3"
    shutil.copytree(base, index)
    add_documents(index, [Document(**EXTRA)], show_progress=False)
    return index


def swaps(index: Path) -> list[tuple[str, str]]:
    """Pairs of same-size, different files of two generations, one the current generation's."""
    with Index.open(index) as idx:
        current = set(idx.manifest.checksums)
    files = [p for p in index.glob("g*/**/*") if p.is_file()]
    pairs = []
    for i, a in enumerate(files):
        for b in files[i + 1 :]:
            names = str(a.relative_to(index)), str(b.relative_to(index))
            apart = names[0].split("/")[0] != names[1].split("/")[0] and current & set(names)
            if apart and a.stat().st_size == b.stat().st_size and a.read_bytes() != b.read_bytes():
                pairs.append(names)
    return pairs


def questions() -> list[str]:
    """Return the sample's questions."""
    lines = (SAMPLE / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["question"] for line in lines if line.strip()]


def answers(index: Path) -> dict[str, list[list[tuple[str, float]]]]:
    """Return each method's top 5 (id, score rounded to 6 places) for every question."""
    with Index.open(index) as idx:
        out = {}
        for method in METHODS:
            retriever = make_retriever(method, idx)
            out[method] = [
                [(h.id, round(h.score, 6)) for h in retriever.retrieve(q, 5)] for q in questions()
            ]
        return out


def damage(path: Path, how: str) -> bool:
    """Damage ``path`` as ``how`` says; False when there is nothing to damage (empty file)."""
    data = path.read_bytes()
    if how in ("delete", "link_zero", "link_dir"):
        path.unlink()
        if how != "delete":
            path.symlink_to("/dev/zero" if how == "link_zero" else path.parent.parent)
    elif how == "unreadable":
        path.chmod(0)
    elif how == "append1m":
        path.write_bytes(data + bytes(1 << 20))
    elif not data:
        return False
    elif how == "truncate":
        path.write_bytes(data[: len(data) // 2])
    else:
        changed = bytearray(data)
        width = 1 if how == "flip" else min(4096, len(data))
        at = (len(data) - width) // 2
        part = changed[at : at + width]
        # zeroed; flipped where already zero (the bytes must change)
        zeroed = how == "zero4k" and any(part)
        changed[at : at + width] = bytes(width) if zeroed else bytes(x ^ 0xFF for x in part)
        path.write_bytes(bytes(changed))
    return True


def served(index: Path, expected: dict) -> str | None:
    """Return how the damaged index served the questions: None if as undamaged or refused.

    "served wrong": a different answer; "traceback": an error that is not hopgraph's.
    """
    try:
        got = answers(index)
    except HopgraphError:
        return None  # refused, named (which method refused is not what is asked)
    except Exception:  # what this matrix looks for
        return "traceback"
    return None if got == expected else "served wrong"


def swap(a: Path, b: Path) -> None:
    """Put the bytes of ``a`` in ``b`` and those of ``b`` in ``a`` (sizes stay as they were)."""
    data = a.read_bytes()
    a.write_bytes(b.read_bytes())
    b.write_bytes(data)


def reads_any_file(folder: Path) -> bool:
    """Whether this process reads a file whose mode forbids it (root with its capabilities)."""
    probe = folder / "mode-000"
    probe.write_bytes(b"x")
    probe.chmod(0)
    try:
        probe.read_bytes()
        return True
    except PermissionError:
        return False
    finally:
        probe.unlink()


def trial(base: Path, folder: Path, name: str, how: str, expected: dict) -> dict:
    """Damage one file of a copy of ``base``; check, repair, check, compare answers.

    ``how`` is one of DAMAGES, or ``swap:OTHER``: ``name`` and OTHER change bytes.
    """
    index = folder / "trial"
    shutil.rmtree(index, ignore_errors=True)
    shutil.copytree(base, index)
    if how == "unreadable" and reads_any_file(folder):
        return {"file": name, "damage": how, "outcome": "skipped (this process reads any file)"}
    if how.startswith("swap:"):
        swap(index / name, index / how.removeprefix("swap:"))
    elif not damage(index / name, how):
        return {"file": name, "damage": how, "outcome": "skipped (empty file)"}
    wrong = served(index, expected)
    started = time.perf_counter()
    named = [str(p) for p in check_index(index)]
    row = {"file": name, "damage": how, "named": len(named)}
    row["check_s"] = round(time.perf_counter() - started, 3)
    if wrong is not None:
        return row | {"outcome": wrong}
    try:
        row["repaired"] = repair(index)
    except HopgraphError as err:
        row |= {"outcome": "not repairable", "why": err.message.splitlines()[0], "hint": err.hint}
        return row
    except Exception as err:  # what this matrix looks for: counted, and the run goes on
        return row | {"outcome": "traceback", "why": f"{type(err).__name__}: {err}"}
    left = [str(p) for p in check_index(index)]
    same = not left and answers(index) == expected
    outcome = "repaired" if same else ("unsound after repair" if left else "answers differ")
    if not named:
        outcome = "not named by check"
    return row | {"outcome": outcome, "left": left}


def run(model: str, folder: Path) -> dict:
    """Return every trial and the count of each outcome."""
    base = build(folder / "base", model)
    expected = answers(base)
    names = sorted(
        str(p.relative_to(base)) for p in base.rglob("*") if p.is_file() and p.name != ".lock"
    )
    runs = [(base, name, how, expected) for name in names for how in DAMAGES]
    three = three_generations(base, folder / "three")
    after_add = answers(three)
    runs += [(three, a, f"swap:{b}", after_add) for a, b in swaps(three)]
    trials = []
    for index, name, how, wanted in runs:
        trials.append(trial(index, folder, name, how, wanted))
        print(f"{trials[-1]['outcome']:<22} {how:<8} {name}", flush=True)
    counts = Counter(t["outcome"] for t in trials)
    slowest = max((t.get("check_s", 0.0) for t in trials), default=0.0)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "files": len(names),
        "trials": len(trials),
        "outcomes": dict(counts),
        "slowest_check_s": slowest,
        "peak_rss_mb": round(peak_mb),
        "all": trials,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the matrix, print a line per trial and the counts; exit 1 if damage went unnamed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--model", default="hashing", help="embedding model (hashing: offline, fast)"
    )
    parser.add_argument("--report", type=Path, help="write the trials here (JSON)")
    args = parser.parse_args(argv)
    if os.geteuid() == 0 and not os.environ.get("HOPGRAPH_DAMAGE_NO_DAC"):
        # root reads a file of mode 000: run as root without that power, as a user would
        argv = [*(sys.argv[1:] if argv is None else argv)]
        command = [sys.executable, "-m", "hopgraph.evals.faults.damage_matrix", *argv]
        env = {**os.environ, "HOPGRAPH_DAMAGE_NO_DAC": "1"}
        return subprocess.run(["setpriv", "--bounding-set", DAC_CAPS, *command], env=env).returncode
    with tempfile.TemporaryDirectory(prefix="damage-matrix-") as tmp:
        report = run(args.model, Path(tmp))
    print(json.dumps({k: v for k, v in report.items() if k != "all"}))
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    bad = {"not named by check", "unsound after repair", "answers differ", "served wrong"}
    bad |= {"traceback"}
    return 1 if bad & set(report["outcomes"]) else 0


if __name__ == "__main__":
    sys.exit(main())
