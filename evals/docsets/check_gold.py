"""Check the dev.jsonl files of the doc sets against their docs/ folders.

For every doc set folder next to this file (a folder holding docs/ and dev.jsonl), it checks
that each question's gold doc ids are files under docs/, that each gold section path exists
in that file (every title of the path, in order, as the section tree gives it), that
gold_ids lists the distinct doc ids of gold_sections in order, that hops and type agree with
the number of distinct sections, and that at least one answer string occurs (after
normalising whitespace, case and markup) in the text of the gold sections.

Section trees:
- reStructuredText is parsed with docutils (Sphinx roles reduced to their text, Sphinx
  directives ignored, includes not followed). The document title is docutils' promoted
  title; text before the first subsection has the path "".
- Markdown: ATX headings outside fenced code blocks and HTML comments; a leading
  ``# Heading`` (after MyST target lines such as ``(label)=`` and blank lines) is the
  document title; inline markup is removed from titles.

Usage: ``python evals/docsets/check_gold.py [--list]`` (``--list`` prints every section path).
Exits non-zero on any problem.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEP = " > "

# ---------------------------------------------------------------- reStructuredText


def _rst_sections(path: Path) -> dict[str, str]:
    """Map each section path of an .rst file to the text directly under it."""
    from docutils import nodes, utils
    from docutils.core import publish_doctree
    from docutils.parsers.rst import Directive, directives, roles

    def text_role(name, rawtext, text, lineno, inliner, options=None, content=None):
        """Render a Sphinx cross-reference role as its plain title."""
        text = utils.unescape(text)
        m = re.match(r"^(.*?)\s*<([^<>]*)>$", text, re.S)
        shown = m.group(1) if m and m.group(1) else text
        shown = shown.lstrip("~!")
        return [nodes.Text(shown)], []

    for name in (
        "doc ref func class meth exc attr mod obj any data issue term py:obj "
        "py:class py:func py:meth py:exc py:attr py:mod py:data"
    ).split():
        roles.register_local_role(name, text_role)

    class Ignore(Directive):
        """Stand-in for Sphinx-only directives: their content is dropped."""

        has_content = True
        optional_arguments = 10
        final_argument_whitespace = True
        option_spec = None

        def run(self):
            return []

    class Keep(Directive):
        """Stand-in for Sphinx admonition-like directives: their content is kept."""

        has_content = True
        optional_arguments = 10
        final_argument_whitespace = True
        option_spec = None

        def run(self):
            node = nodes.container()
            self.state.nested_parse(self.content, self.content_offset, node)
            return [node]

    for name in (
        "toctree literalinclude automodule autoclass autofunction autodata testsetup "
        "testcleanup module data versionadded versionchanged deprecated meta"
    ).split():
        directives.register_directive(name, Ignore)

    class Code(Directive):
        """Stand-in for Sphinx's code-block: a literal block."""

        has_content = True
        optional_arguments = 1
        option_spec = None

        def run(self):
            return [nodes.literal_block(text="\n".join(self.content))]

    directives.register_directive("seealso", Keep)
    for name in ("code-block", "sourcecode"):
        directives.register_directive(name, Code)

    class _Opts(dict):
        def __missing__(self, key):
            return directives.unchanged

    for cls in (Ignore, Keep, Code):
        cls.option_spec = _Opts()
    roles.register_local_role("", text_role)  # the default role (Sphinx's py:obj / any)

    doctree = publish_doctree(
        path.read_text(encoding="utf-8"),
        source_path=str(path),
        settings_overrides={
            "report_level": 5,
            "halt_level": 5,
            "file_insertion_enabled": False,
        },
    )
    out: dict[str, str] = {}

    def own_text(node) -> str:
        parts = []
        for child in node.children:
            if isinstance(child, (nodes.section, nodes.title)):
                continue
            parts.append(child.astext())
        return "\n".join(parts)

    def walk(node, trail: list[str]) -> None:
        for child in node.children:
            if isinstance(child, nodes.section):
                title = child.next_node(nodes.title).astext()
                new = [*trail, title]
                out[SEP.join(new)] = own_text(child)
                walk(child, new)

    out[""] = own_text(doctree)
    walk(doctree, [])
    return out


# ---------------------------------------------------------------- Markdown

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_ATX = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_TARGET = re.compile(r"^\([^()]+\)=\s*$")


def md_plain(title: str) -> str:
    """Strip inline Markdown markup from a heading."""
    title = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", title)
    title = re.sub(r"\[([^\]]*)\]\[[^\]]*\]", r"\1", title)
    title = re.sub(r"\{[a-z:-]+\}`([^`]*)`", r"\1", title)
    title = title.replace("`", "")
    title = re.sub(r"(\*{1,3}|_{1,3})(\S.*?\S|\S)\1", r"\2", title)
    return title.strip()


def _md_sections(path: Path) -> dict[str, str]:
    """Map each section path of a .md file to the text directly under it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = 0
    if lines and lines[0].strip() == "---":
        for i in range(1, len(lines)):
            if lines[i].strip() == "---":
                start = i + 1
                break
    out: dict[str, list[str]] = {"": []}
    stack: list[tuple[int, str]] = []
    fence = None
    in_comment = False
    seen_content = False
    title_taken = False
    current = ""
    for line in lines[start:]:
        if in_comment:
            out[current].append(line)
            in_comment = "-->" not in line
            continue
        if not fence and line.lstrip().startswith("<!--") and "-->" not in line:
            in_comment = True
            out[current].append(line)
            continue
        m = _FENCE.match(line)
        if fence:
            out[current].append(line)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            out[current].append(line)
            seen_content = True
            continue
        h = _ATX.match(line)
        if h:
            level, title = len(h.group(1)), md_plain(h.group(2))
            if level == 1 and not seen_content and not title_taken:
                title_taken = True
                seen_content = True
                continue
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            current = SEP.join(t for _, t in stack)
            out.setdefault(current, [])
            seen_content = True
            continue
        if line.strip() and not _TARGET.match(line):
            seen_content = True
        out[current].append(line)
    return {k: "\n".join(v) for k, v in out.items()}


# ---------------------------------------------------------------- checks


def sections_of(path: Path) -> dict[str, str]:
    """Section path -> own text, for an .rst or .md file."""
    if path.suffix == ".rst":
        return _rst_sections(path)
    return _md_sections(path)


def norm(text: str) -> str:
    """Lower-case, drop markup characters and collapse whitespace, for answer matching."""
    text = text.lower().replace("`", "").replace("*", "")
    text = re.sub(r"[\u2018\u2019]", "'", text)
    text = re.sub(r"[\u201c\u201d]", '"', text)
    return re.sub(r"\s+", " ", text).strip()


def check_set(folder: Path, listing: bool) -> list[str]:
    """Return the problems found in one doc set."""
    problems: list[str] = []
    docs = folder / "docs"
    cache: dict[str, dict[str, str]] = {}
    files = sorted(p for p in docs.rglob("*") if p.suffix in (".rst", ".md"))
    for p in files:
        doc_id = p.relative_to(docs).as_posix()
        cache[doc_id] = sections_of(p)
        if listing:
            for sec in cache[doc_id]:
                print(f"{folder.name}\t{doc_id}\t{sec}")
    ids = set()
    n = two = 0
    used_docs = set()
    for lineno, raw in enumerate((folder / "dev.jsonl").read_text().splitlines(), 1):
        if not raw.strip():
            continue
        q = json.loads(raw)
        n += 1
        where = f"{folder.name}/dev.jsonl:{lineno} ({q.get('id')})"
        if q["id"] in ids:
            problems.append(f"{where}: duplicate id")
        ids.add(q["id"])
        secs = [tuple(s) for s in q["gold_sections"]]
        if len(set(secs)) != len(secs):
            problems.append(f"{where}: duplicate gold section")
        want_ids = list(dict.fromkeys(d for d, _ in secs))
        if q["gold_ids"] != want_ids:
            problems.append(f"{where}: gold_ids {q['gold_ids']} != {want_ids}")
        hops = 2 if len(secs) >= 2 else 1
        typ = "two-section" if hops == 2 else "one-section"
        if q["hops"] != hops or q["type"] != typ:
            problems.append(f"{where}: hops/type {q['hops']}/{q['type']} for {len(secs)} sections")
        two += hops == 2
        text = ""
        for doc_id, sec in secs:
            used_docs.add(doc_id)
            if doc_id not in cache:
                problems.append(f"{where}: no file {doc_id}")
                continue
            if sec not in cache[doc_id]:
                problems.append(f"{where}: no section {sec!r} in {doc_id}")
                continue
            text += "\n" + cache[doc_id][sec]
        # very short answers ("No", "3") would match almost anything: check the longer ones
        answers = [a for a in q["answers"] if len(norm(a)) > 3] or q["answers"]
        if text and not any(norm(a) in norm(text) for a in answers):
            problems.append(f"{where}: no answer string found in the gold sections")
        if not q["question"].strip() or not q["answers"]:
            problems.append(f"{where}: empty question or answers")
    print(
        f"{folder.name}: {len(files)} files, {n} questions, {two} two-section, "
        f"{len(used_docs)} files used as gold"
    )
    return problems


def main() -> int:
    """Check every doc set; print problems; return the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", action="store_true", help="print every section path")
    args = ap.parse_args()
    problems: list[str] = []
    for folder in sorted(p for p in HERE.iterdir() if (p / "docs").is_dir()):
        if (folder / "dev.jsonl").exists():
            problems += check_set(folder, args.list)
    for p in problems:
        print("PROBLEM:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
