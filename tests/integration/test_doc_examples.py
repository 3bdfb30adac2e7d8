"""Every shell and Python example of README.md and docs/ runs against the bundled sample.

Each page runs in its own folder laid out like the checkout's root (``hopgraph/`` links to the
package, whose ``sample/notes`` the README's tour copies); pages other than the README and
Getting started, which build ``my-index`` themselves, also find ``my-index`` built from those
notes with its graphs. ``HOPGRAPH_INDEX`` is ``my-index``, as a user who follows the tour would
set it. Blocks that need an LLM run against a scripted OpenAI-compatible server; blocks marked
otherwise are counted, not run (the unit test ``test_every_shell_example_runs_or_says_why``
holds the count).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hopgraph.evals.servers.scripted_llm import ScriptedOpenAIServer, never_enough
from tests.doc_examples import NEEDS_LLM, PAGES, ROOT, Example, examples, shown

pytestmark = pytest.mark.integration
BUILDS_ITS_INDEX = {"README.md", "docs/getting-started.md"}
RUNNABLE = [page for page in PAGES if any(e.runs for e in examples(page))]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``my-index`` of the sample notes, graphs built, once for every page."""
    folder = tmp_path_factory.mktemp("built")
    env = _env(folder)
    shutil.copytree(ROOT / "hopgraph/sample/notes", folder / "notes")
    _run("hopgraph index notes --index my-index", folder, env)
    _run("hopgraph graph build --index my-index", folder, env)
    return folder / "my-index"


def _env(folder: Path, cache: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HOPGRAPH_", "OPENAI_"))}
    env |= {
        "HF_HUB_OFFLINE": "1",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        "HOPGRAPH_CACHE": str(cache or folder / ".cache"),
        "HOPGRAPH_INDEX": "my-index",
        "HOPGRAPH_LLM": "none",
        "COLUMNS": "100",
    }
    return env


def _run(command: str, folder: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"`{command}` exited {done.returncode}:\n{done.stdout[-3000:]}"
    return done.stdout


@pytest.mark.parametrize("page", RUNNABLE)
def test_a_pages_shell_examples_run_and_show_what_it_says(page, built, tmp_path, tmp_path_factory):
    # The folder looks like the checkout's root, where the README's tour starts: `hopgraph/` is
    # the package (a partial copy would shadow the installed one for `python -`).
    (tmp_path / "hopgraph").symlink_to(ROOT / "hopgraph", target_is_directory=True)
    if page not in BUILDS_ITS_INDEX:
        shutil.copytree(built, tmp_path / "my-index")
        shutil.copytree(ROOT / "hopgraph/sample/notes", tmp_path / "notes")
    env = _env(tmp_path, cache=built.parent / ".cache")  # one ONNX export for every page
    with ScriptedOpenAIServer(lambda prompt, n: (200, never_enough(prompt))) as llm:
        for example in (e for e in examples(page) if e.runs):
            _run_example(example, tmp_path, env, llm.url)


def _run_example(example: Example, folder: Path, env: dict[str, str], llm_url: str) -> None:
    if example.reason and example.reason.startswith(NEEDS_LLM):
        env = env | {"HOPGRAPH_LLM": "auto", "HOPGRAPH_LLM_BASE_URL": llm_url}
        env |= {"HOPGRAPH_LLM_MODEL": "scripted", "HOPGRAPH_LLM_API_KEY": "unused"}
    for command in example.commands:
        if example.reason and command.text.startswith("export "):
            continue  # the user's own server: the scripted one stands in for it
        output = _run(command.text, folder, env)
        missing = shown(command.expected, output)
        assert missing is None, (
            f"{example.where}: `{command.text}` does not show {missing!r}:\n{output[-3000:]}"
        )
