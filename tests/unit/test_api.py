"""The Python API: `import hopgraph` names what docs/api.md says, and its examples run."""

import re
from pathlib import Path

import hopgraph

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)


def test_every_name_of_the_api_resolves_and_is_documented():
    for name in hopgraph.__all__:
        value = getattr(hopgraph, name)
        if name not in ("__version__", "RETRIEVERS"):
            assert (value.__doc__ or "").strip(), name
    table = DOC.read_text(encoding="utf-8")
    documented = {n for n in hopgraph.__all__ if n != "__version__"}
    assert all(f"`{n}" in table or f"{n}(" in table for n in documented), documented


def test_the_pages_examples_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOPGRAPH_LLM", "none")  # the agent example then skips its run
    scope: dict = {}
    for code in blocks():
        exec(compile(code, str(DOC), "exec"), scope)  # our own documentation
    printed = capsys.readouterr().out
    assert "Larry Alcala" in printed and "University of Santo Tomas" in printed
