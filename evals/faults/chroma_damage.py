"""Damage every Chroma file of an index in turn and see whether `hopgraph check` names it.

``python -m hopgraph.evals.faults.chroma_damage --index DIR [--repair]``

For each file under the index's Chroma folder and each damage (cut to half, deleted, 16 bytes
inverted at its head, a quarter, the middle, three quarters), a copy of the index is damaged
and checked; with ``--repair``, each detected copy is repaired, checked again and asked a fixed
question by every method that reads stored vectors (dense: the chunks'; naive_ge: the
triples'), whose top 5 (ids and scores) must be the undamaged index's. Prints one line per case
and the totals. The index itself is never touched.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from hopgraph.graph_store.index.check import check_index

DAMAGES: dict[str, Callable[[Path], None]] = {}


def _damage(name: str) -> Callable[[Callable[[Path], None]], Callable[[Path], None]]:
    def register(fn: Callable[[Path], None]) -> Callable[[Path], None]:
        DAMAGES[name] = fn
        return fn

    return register


@_damage("truncate")
def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


@_damage("delete")
def _delete(path: Path) -> None:
    path.unlink()


def _flipper(fraction: float) -> Callable[[Path], None]:
    def flip(path: Path) -> None:
        data = bytearray(path.read_bytes())
        at = min(int(len(data) * fraction), max(len(data) - 16, 0)) if fraction else 20
        data[at : at + 16] = bytes(b ^ 0xFF for b in data[at : at + 16])
        path.write_bytes(bytes(data))

    return flip


for _name, _fraction in (("flip head", 0.0), ("flip 1/4", 0.25), ("flip 1/2", 0.5),
                         ("flip 3/4", 0.75)):  # fmt: skip
    DAMAGES[_name] = _flipper(_fraction)


def main(argv: list[str] | None = None) -> int:
    """Run every damage on a copy; print the matrix and the totals."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, required=True, help="a graph-built index")
    parser.add_argument("--repair", action="store_true", help="repair what check finds")
    args = parser.parse_args(argv)
    from hopgraph.graph_store.index.repair import repair

    expected = _answers(args.index)
    files = sorted(p.relative_to(args.index) for p in (args.index / "chroma").rglob("*"))
    found = missed = mended = 0
    with tempfile.TemporaryDirectory() as scratch:
        for name in (f for f in files if (args.index / f).is_file()):
            for damage, apply in DAMAGES.items():
                if damage != "delete" and not (args.index / name).stat().st_size:
                    continue  # an empty file has nothing to cut or flip
                copy = Path(scratch) / "copy"
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(args.index, copy)
                apply(copy / name)
                problems = [p for p in check_index(copy) if p.where.startswith("Chroma")]
                status = "named" if problems else "not seen"
                found, missed = found + bool(problems), missed + (not problems)
                if problems and args.repair:
                    repair(copy)
                    sound = not check_index(copy)
                    same = sound and _answers(copy) == expected
                    mended += same
                    failed = "check still fails" if not sound else "other answers"
                    status += ", repaired" if same else f", REPAIR FAILED ({failed})"
                print(f"{name!s:<60} {damage:<10} {status}", flush=True)
    total = found + missed
    print(
        f"named {found} of {total} damaged copies" + (f"; repaired {mended}" if args.repair else "")
    )
    return 0


QUESTION = "When did military instruction start where Larry Alcala studied?"
METHODS = ("dense", "naive_ge")


def _answers(directory: Path) -> dict[str, list[tuple[str, float]]]:
    """Return each method's top 5 for :data:`QUESTION`: ids and scores (rounded to 1e-5)."""
    from hopgraph.graph_store.index.reader import Index
    from hopgraph.tools.shared.registry import make_retriever

    with Index.open(directory) as index:
        return {
            method: [
                (hit.id, round(hit.score, 5))
                for hit in make_retriever(method, index).retrieve(QUESTION, 5)
            ]
            for method in METHODS
        }


if __name__ == "__main__":
    sys.exit(main())
