"""The documentation site builds without a warning, and its references match the code."""

import os
import subprocess
import sys
from pathlib import Path

from hopgraph import reference

ROOT = Path(__file__).resolve().parents[2]


def test_the_cli_and_configuration_references_are_the_code_s(capsys):
    assert reference.main(["--check"]) == 0, capsys.readouterr().err


def test_a_new_flag_makes_the_cli_reference_stale(monkeypatch):
    from hopgraph import cli

    real = cli.build_parser

    def with_a_new_flag():
        parser = real()
        parser.add_argument("--brand-new-flag", help="not documented yet")
        return parser

    monkeypatch.setattr(cli, "build_parser", with_a_new_flag)
    page = (ROOT / "docs/cli.md").read_text(encoding="utf-8")
    assert reference.replaced(page, "cli", reference.cli_reference()) != page


def test_the_site_builds_in_strict_mode(tmp_path):
    """mkdocs-material with mkdocstrings: no broken link or anchor, every API name resolves."""
    mkdocs = Path(sys.executable).parent / "mkdocs"
    result = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    api = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    assert 'id="hopgraph.graph_store.build.build_index"' in api  # mkdocstrings rendered it


def test_the_readme_stays_a_page_a_new_user_reads():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 250
