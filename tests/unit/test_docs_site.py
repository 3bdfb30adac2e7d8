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
    assert 'id="hopgraph.graph_store.index.build.build_index"' in api  # mkdocstrings rendered it


def test_the_readme_stays_a_page_a_new_user_reads():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 250


def test_every_shell_example_runs_or_says_why():
    """tests/integration/test_doc_examples.py runs them; here, that they parse and are counted."""
    from tests.doc_examples import PAGES, examples

    found = [e for page in PAGES for e in examples(page)]
    assert all(e.commands for e in found), [e.where for e in found if not e.commands]
    assert all(e.runs or e.reason.strip() for e in found)
    run = sum(len(e.commands) for e in found if e.runs)
    assert run >= 45, run  # the tour, the everyday commands, filters, graphs, agents, explain
    readme = [e for e in found if e.page == "README.md" and e.runs]
    assert any(c.expected for e in readme for c in e.commands)  # the tour shows its output


def test_an_output_line_the_command_does_not_print_is_named():
    from tests.doc_examples import shown

    output = " 1. 0.817  anna-benson.md  Anna Benson\n 2. 0.787  kris-benson.md  Kris Benson\n"
    assert shown([" 1. 0.817  anna-benson.md  Anna Benson", "…", " 2. … Kris"], output) is None
    assert shown([" 2. … Kris Benson", " 1. … Anna Benson"], output) == " 1. … Anna Benson"
    assert shown(["built my-index: 60 documents"], output) == "built my-index: 60 documents"
