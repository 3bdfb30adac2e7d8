"""Lint and formatting are part of the suite, so CI fails on them like on any test."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("args", [["check", "."], ["format", "--check", "."]])
def test_ruff(args):
    result = subprocess.run(
        [sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_imports_only_run_downward():
    """The import-linter contracts of pyproject.toml, and the drawing: nothing up, no circles.

    ``lint-imports`` runs on the checkout as it is, as a developer would run it.
    """
    from hopgraph.evals.imports import draw

    counts = draw()
    assert counts["arrows_running_up"] == 0 and counts["module_circles"] == 0, counts
    assert counts["arrows_across_a_floor"] == 0, counts  # graph_store's stores | embedding
    lint = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run(
        [str(lint), "--no-cache", "--config", str(ROOT / "pyproject.toml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_no_module_is_longer_than_the_limit_and_no_folder_fuller():
    """Past 500 lines a module becomes rooms; past 15 modules, a folder does (issue 71)."""
    from hopgraph.evals.imports import MAX_LINES, MAX_MODULES, package_files

    files = package_files()
    assert len(files) > 200  # every linked floor was followed
    long = {f.name: n for f in files if (n := len(f.read_text(encoding="utf-8").splitlines()))
            > MAX_LINES}  # fmt: skip
    assert not long, f"modules over {MAX_LINES} lines: {long}"
    per_folder: dict[Path, int] = {}
    for f in files:
        per_folder[f.parent] = per_folder.get(f.parent, 0) + 1
    full = {str(d): n for d, n in per_folder.items() if n > MAX_MODULES}
    assert not full, f"folders holding more than {MAX_MODULES} modules: {full}"
