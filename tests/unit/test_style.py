"""Lint and formatting are part of the suite, so CI fails on them like on any test."""

import shutil
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


def test_imports_only_run_downward(tmp_path):
    """The import-linter contracts of pyproject.toml: layers, no circles, independent siblings.

    import-linter reads a package from its folder; in a checkout hopgraph's subpackages sit
    beside it (pyproject.toml's package-dir), so it reads a copy laid out as installed.
    """
    skip = shutil.ignore_patterns("__pycache__", "weights_data", "sample")
    shutil.copytree(ROOT / "hopgraph", tmp_path / "hopgraph", ignore=skip)
    for name in ("agents", "tools", "graph_store", "prompts", "evals"):
        shutil.copytree(ROOT / name, tmp_path / "hopgraph" / name, ignore=skip)
    (tmp_path / "hopgraph" / "__init__.py").write_text('"""hopgraph, as installed."""\n')
    lint = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run(
        [str(lint), "--no-cache", "--config", str(ROOT / "pyproject.toml")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout
