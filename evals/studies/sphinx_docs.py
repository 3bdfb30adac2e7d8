"""Sphinx's own docs through hopgraph's loader and chunker: cut code, role leftovers, autodoc.

    python -m hopgraph.evals.studies.sphinx_docs SDIST_DIR [--out
    evals/results/documents/sphinx-docs.json]
        [--label after] [--import-path DIR ...] [--autodoc-source DIR ...]

SDIST_DIR is Sphinx's source distribution, unpacked (``pip download --no-deps --no-binary :all:
sphinx==8.1.3``, then ``tar xzf``). Its ``doc/`` folder is loaded as ``hopgraph index
SDIST_DIR/doc`` loads it (every file; autodoc's source found beside the docs, ``SDIST_DIR/sphinx``,
unless ``--autodoc-source`` is given) and chunked as an index build chunks it (the default
settings: all-MiniLM-L6-v2's tokens, 200 a chunk); nothing is embedded. Counted:

- **odd fences**: chunks with an odd number of fence lines (three or more backquotes or tildes,
  up to three spaces in): a code block cut open or left unclosed.
- **role leftovers**: each role docutils runs is recorded (where docutils looks a role up, so
  roles in code are not), with the text its nodes show; a leftover is

  - *leading dot*: a Python role (``func``, ``meth``, ``class``, ``attr``, ``data``, ``const``,
    ``exc``, ``obj``, ``mod``) that shows a text starting with ``.`` or ``~``
    (``:meth:`.Sphinx.connect``` as ``.Sphinx.connect``; Sphinx shows ``Sphinx.connect()``);
  - *raw label*: a bare ``:ref:`label``` that shows its label although the label has a title:
    a section title after it in some page of the folder (read from the lines, not through
    hopgraph), or one of Sphinx's own (``genindex``: Index, ``search``: Search Page, ...). A
    label before something else than a section (an anonymous label) or from another project
    (``requests:verification``) has no title here, and Sphinx shows its label too: not counted;
  - *document path*: a bare ``:doc:`path``` that shows its path although the page exists in
    the folder (``usage/quickstart`` where Sphinx shows "Getting started");
  - *role markup*: a role's name left in a chunk's text before backquoted text
    (``:func:`x```), outside fenced code and code spans: a role docutils did not run.
- **autodoc**: the autodoc directives docutils met (counted where docutils looks a directive
  up, so the examples inside code blocks are not), and those read from the source (the load's
  report; 0 for code that has no autodoc reading). With ``--import-path``, each directive's object
  is also imported as Sphinx would (in a child process: the sdist first on ``sys.path``, then
  the paths given, which hold Sphinx's dependencies, e.g. ``pip install --target DIR
  sphinx==8.1.3``; an attribute known only from its documentation is found by Sphinx's own
  source analyser), and the file it is defined in tells whether it is in ``sphinx/``: how
  many name an importable object of Sphinx's source, how many of those were not read, and
  the importable ones of other packages.

Before and after: "after" is this tree. "before" is the code before issue 53's work, commit
f35d2bd, measured by running this file from the current tree with the old code first on the
path (it imports only what that code already had: the loader, the chunker, the embedder)::

    git worktree add /work/before f35d2bd
    PYTHONPATH=/work/before python evals/studies/sphinx_docs.py SDIST_DIR --label before --out FILE

(run as a file, its own folder is first on ``sys.path``, then the worktree, then the installed
hopgraph; the results' ``code`` is the commit of the hopgraph that was imported).

Each run replaces its label's entry in the JSON file and keeps the others.

The figures it makes: docs/documents.md, "Documentation".
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

AUTODOC = (
    "automodule autoclass autoexception autofunction autodecorator automethod autoproperty "
    "autoattribute autodata".split()
)
"""autodoc's directives (``autosummary`` is another extension's, and not counted)."""
PYTHON_ROLES = frozenset("func meth class attr data const exc obj mod".split())
BUILTIN_LABELS = {
    "genindex": "index",
    "modindex": "module index",
    "py-modindex": "python module index",
    "search": "search page",
}
"""The labels Sphinx itself defines, and their titles (lower-cased)."""
SHOWN = 12
"""Examples of each count kept in the results."""

_FENCE = re.compile(r"^ {0,3}(?:`{3,}|~{3,})", re.MULTILINE)
_FENCED = re.compile(r"^ {0,3}(`{3,}|~{3,}).*?(?:^ {0,3}\1[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)
_ROLE_BEFORE = re.compile(r"(?<![\w`]):[A-Za-z][\w:+.-]*:$")
_TITLED = re.compile(r"^.+?\s*<[^<>]+>$", re.DOTALL)
_LABEL = re.compile(r"^\.\.\s+_([^:]+):\s*$")
_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}\s*$")


def odd_fences(text: str) -> bool:
    """Tell whether ``text`` has an odd number of fence lines."""
    return len(_FENCE.findall(text)) % 2 == 1


def split_code(text: str) -> tuple[str, list[tuple[str, str]]]:
    """Return ``text`` without fenced code, and its code spans with the prose just before each."""
    prose = _FENCED.sub("\n", text)
    spans, start = [], 0
    for found in _SPAN.finditer(prose):
        spans.append((prose[start : found.start()], found.group(2).strip()))
        start = found.end()
    return prose, spans


def label_titles(docs: Path) -> dict[str, str]:
    """Return each label's title (the section title after it), lower-cased, across the folder.

    Read from the lines (not through hopgraph), with Sphinx's own labels (``genindex``, ...).
    A label before something else than a section (an anonymous label) has no title.
    """
    titles = dict(BUILTIN_LABELS)
    for page in docs.rglob("*.rst"):
        lines = page.read_text(encoding="utf-8", errors="replace").splitlines()
        for i, line in enumerate(lines):
            found = _LABEL.match(line)
            if not found:
                continue
            rest = [x for x in lines[i + 1 : i + 12] if x.strip() and not _LABEL.match(x)]
            if len(rest) >= 3 and _ADORNMENT.match(rest[0]):
                rest = rest[1:]  # an overlined title
            if len(rest) >= 2 and _ADORNMENT.match(rest[1]):
                titles[" ".join(found.group(1).lower().split())] = rest[0].strip().lower()
    return titles


def leftovers(calls: list[RoleCall], docs: Path, titles: dict[str, str]) -> Counter[str]:
    """Count the role leftovers among the roles docutils ran (see the module doc)."""
    count: Counter[str] = Counter()
    for call in calls:
        kind = leftover(call, docs, titles)
        if kind:
            count[kind] += 1
    return count


def leftover(call: RoleCall, docs: Path, titles: dict[str, str]) -> str:
    """Return what a role left instead of Sphinx's text ("" when nothing): see the module doc."""
    base = call.name.rpartition(":")[2]
    target = " ".join(call.text.split()).lstrip("!")
    shown = " ".join(call.shown.split())
    if _TITLED.match(target) or base not in ("ref", "doc", *PYTHON_ROLES):
        return ""
    if base in PYTHON_ROLES:
        return "leading_dot" if shown[:1] in (".", "~") else ""
    if shown != target:
        return ""
    if base == "ref":
        title = titles.get(" ".join(target.lower().split()))
        return "" if title is None else "raw_label" if title != target.lower() else ""
    page = Path(call.source).resolve().parent
    name = target.lstrip("/") if target.startswith("/") else str(page.relative_to(docs) / target)
    exists = (docs / f"{name}.rst").resolve().is_file() or (docs / f"{name}.md").is_file()
    return "doc_path" if exists else ""


def role_markup(text: str) -> int:
    """Count the role names left before backquoted text in a chunk, outside code."""
    spans = split_code(text)[1]
    return sum(1 for before, _ in spans if _ROLE_BEFORE.search(before))


@dataclass(frozen=True)
class RoleCall:
    """One role docutils ran: the page, the role, its text as written and what it shows."""

    source: str
    name: str
    text: str
    shown: str


@contextmanager
def counting_roles() -> Iterator[list[RoleCall]]:
    """Record every role docutils runs within, with the text its nodes show."""
    from docutils.parsers.rst import roles

    calls: list[RoleCall] = []
    lookup = roles.role

    def role(name: str, *args: Any) -> tuple[Any, list[Any]]:
        run, messages = lookup(name, *args)
        if run is None:
            return run, messages

        def recorded(role_name: str, rawtext: str, text: str, *rest: Any, **kw: Any) -> Any:
            out, problems = run(role_name, rawtext, text, *rest, **kw)
            source = str(rest[1].document.get("source", "")) if len(rest) > 1 else ""
            shown = "".join(node.astext() for node in out)
            calls.append(RoleCall(source, role_name, text, shown))
            return out, problems

        return recorded, messages

    roles.role = role
    try:
        yield calls
    finally:
        roles.role = lookup


@contextmanager
def counting_directives() -> Iterator[Counter[str]]:
    """Count the autodoc directives docutils looks up within (its examples in code are not)."""
    from docutils.parsers.rst import directives

    met: Counter[str] = Counter()
    lookup = directives.directive

    def directive(name: str, *args: object) -> object:
        if name in AUTODOC:
            met[name] += 1
        return lookup(name, *args)

    directives.directive = directive
    try:
        yield met
    finally:
        directives.directive = lookup


def load_and_chunk(docs: Path, autodoc_source: list[Path]) -> tuple[Any, list[Any]]:
    """Load the folder as ``hopgraph index`` does and chunk it as an index build does."""
    from hopgraph.core.settings import IndexSettings
    from hopgraph.graph_store.documents.loaders import load_corpus
    from hopgraph.graph_store.embedding.embedders import load_embedder
    from hopgraph.graph_store.index.writes import chunk_documents

    given = {"autodoc_source": autodoc_source} if autodoc_source else {}  # the old code: none
    loaded = load_corpus(docs, **given)
    settings = IndexSettings.from_settings()
    chunks = chunk_documents(loaded.documents, settings, load_embedder(settings.model))
    return loaded, chunks


def measure(sdist: Path, import_path: list[Path], autodoc_source: list[Path]) -> dict[str, Any]:
    """Return the counts of one code base (the one imported) on ``sdist``'s docs."""
    docs = (sdist / "doc").resolve()
    with counting_directives() as met, counting_roles() as calls:
        loaded, chunks = load_and_chunk(docs, autodoc_source)
    fences = [chunk.id for chunk in chunks if odd_fences(chunk.text)]
    kinds = leftovers(calls, docs, label_titles(docs))
    kinds["role_markup"] = sum(role_markup(chunk.text) for chunk in chunks)
    return {
        "code": _commit(),
        "docs": str(docs),
        "autodoc_source": [str(p) for p in autodoc_source] or "beside the docs",
        "documents": len(loaded.documents),
        "chunks": len(chunks),
        "odd_fences": {"chunks": len(fences), "examples": fences[:SHOWN]},
        "role_leftovers": {
            "roles_run": len(calls),
            "total": sum(n for k, n in kinds.items() if k != "untitled"),
            **dict(sorted(kinds.items())),
            "examples": leftover_examples(calls, docs),
        },
        "autodoc": autodoc_counts(loaded, met, sdist, import_path),
    }


def leftover_examples(calls: list[RoleCall], docs: Path) -> list[str]:
    """Return the first leftovers, each as "page: :role:`text` -> shown"."""
    titles = label_titles(docs)
    out = []
    for call in calls:
        kind = leftover(call, docs, titles)
        if kind and kind != "untitled" and len(out) < SHOWN:
            page = Path(call.source).name
            out.append(f"{page}: :{call.name}:`{call.text}` -> {call.shown!r} ({kind})")
    return out


def autodoc_counts(
    loaded: Any, met: Counter[str], sdist: Path, import_path: list[Path]
) -> dict[str, Any]:
    """Return the directives met, those read from the source, and (optionally) importable."""
    sources = getattr(loaded.report, "autodoc", None)
    records = list(getattr(sources, "met", []))
    out: dict[str, Any] = {
        "met": sum(met.values()),
        "by_directive": dict(sorted(met.items())),
        "resolved": sum(1 for r in records if r.found),
        "not_read": [_named(r) for r in records if not r.found],
    }
    if sources is None:  # the code before autodoc's reading: every directive an empty stub
        out["not_read"] = "all: this code reads no autodoc directive"
    if import_path and records:
        files = imported(sdist, import_path, [list(r.tried) for r in records])
        package = str((sdist / "sphinx").resolve())
        ours = [bool(f) and f.startswith(package) for f in files]
        out["importable"] = sum(1 for f in files if f)
        out["importable_from_sphinx"] = sum(ours)
        out["importable_from_sphinx_not_read"] = [
            _named(r) for r, mine in zip(records, ours, strict=True) if mine and not r.found
        ]
        elsewhere = zip(records, files, ours, strict=True)
        out["importable_elsewhere"] = [
            f"{_named(r)} ({_package(f)})" for r, f, mine in elsewhere if f and not mine
        ]
        out["read_not_importable"] = [
            _named(r) for r, f in zip(records, files, strict=True) if r.found and not f
        ]
    return out


def _named(record: Any) -> str:
    return f"{Path(record.file).name}:{record.line} {record.directive}:: {record.name}"


def _package(file: str) -> str:
    """Return the distribution folder an imported file lies in (its top-level package)."""
    parts = Path(file).parts
    at = next((i for i, p in enumerate(parts) if p in ("site-packages", "sphinx-deps")), -1)
    return parts[at + 1] if 0 <= at < len(parts) - 1 else file


_IMPORT = r"""
import importlib, inspect, json, sys

def attribute_documented(cls, name):
    from sphinx.pycode import ModuleAnalyzer
    for base in getattr(cls, "__mro__", ()):
        if name in getattr(base, "__annotations__", {}):
            return True
        try:
            docs = ModuleAnalyzer.for_module(base.__module__).find_attr_docs()
        except Exception:
            continue
        if (base.__qualname__, name) in docs:
            return True
    return False

def defined_in(obj, owner):
    for candidate in (obj, owner):
        try:  # a decorated function (contextmanager) is where its own code is
            return inspect.getsourcefile(inspect.unwrap(candidate)) or inspect.getfile(candidate)
        except (TypeError, ValueError):
            continue
    return ""

def importable(path):
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except Exception:
            continue
        owner = obj
        for j, name in enumerate(parts[i:]):
            if inspect.ismodule(obj) or inspect.isclass(obj):
                owner = obj
            try:
                obj = getattr(obj, name)
            except AttributeError:
                last = j == len(parts[i:]) - 1
                ok = last and inspect.isclass(obj) and attribute_documented(obj, name)
                return defined_in(obj, obj) if ok else ""
        return defined_in(obj, owner)
    return ""

tried = json.load(sys.stdin)
print(json.dumps([next(filter(None, map(importable, paths)), "") for paths in tried]))
"""


def imported(sdist: Path, paths: list[Path], tried: list[list[str]]) -> list[str]:
    """Return, for each directive's paths, the file its object is defined in ("": none imports).

    Run in a child process with the sdist first on the path, then ``paths``.
    """
    env_path = ":".join(str(p.resolve()) for p in [sdist, *paths])
    result = subprocess.run(
        [sys.executable, "-c", _IMPORT],
        input=json.dumps(tried),
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _commit() -> str:
    """Return the commit of the hopgraph code imported (the worktree's for "before")."""
    from hopgraph.graph_store.documents import loaders  # the code measured (evals sits above)

    folder = Path(loaders.__file__).resolve().parent
    done = subprocess.run(
        ["git", "-C", str(folder), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return done.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    """Measure, print the figures and merge them into ``--out`` under ``--label``."""
    parser = argparse.ArgumentParser(
        prog="python -m hopgraph.evals.studies.sphinx_docs", description=__doc__
    )
    parser.add_argument("sdist", type=Path, help="Sphinx's unpacked sdist (holding doc/, sphinx/)")
    parser.add_argument("--out", type=Path, help="a JSON file of results, by label")
    parser.add_argument("--label", default="after", help="the entry to write (default after)")
    parser.add_argument(
        "--import-path",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="also import each autodoc object, with DIR (Sphinx's dependencies) on the path",
    )
    parser.add_argument(
        "--autodoc-source",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="load with --autodoc-source DIR (repeatable; default: the source beside the docs)",
    )
    args = parser.parse_args(argv)
    figures = measure(args.sdist, args.import_path, args.autodoc_source)
    print(json.dumps({args.label: figures}, indent=2))
    if args.out:
        results = json.loads(args.out.read_text()) if args.out.exists() else {}
        results[args.label] = figures
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
