"""Sphinx's markup for docutils: its roles and directives, rendered as the text a reader sees.

docutils parses reStructuredText; Sphinx adds roles (``:func:`x```, ``:ref:`text <label>```)
and directives (``code-block``, ``literalinclude``, ``versionadded``, ``py:function``, ...)
that docutils alone reports as unknown and drops. Without Sphinx (a large dependency with a
build step) we register stand-ins that keep what a reader of the built page sees: a role's
text, a code block's lines as written, a description's signature and body. Names neither
docutils nor this module knows (a project's own extension) are registered on sight as a
container that keeps their content (:func:`register_unknown`).
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from typing import ClassVar

from docutils import nodes
from docutils.parsers.rst import Directive, directives, roles
from docutils.parsers.rst.directives import misc
from docutils.parsers.rst.languages import en as _english

from .rst_references import reference_role

CODE_ROLES = frozenset(
    "func class meth attr data const exc obj mod envvar option program command file samp kbd "
    "makevar mimetype regexp dfn keyword confval event directive role".split()
)
"""Roles Sphinx renders as code (the rest, ``ref`` / ``doc`` / ``term`` ..., as plain text)."""

DROPPED_DIRECTIVES = frozenset(
    "toctree index highlight currentmodule module py:module py:currentmodule default-role "
    "default-domain sectionauthor codeauthor moduleauthor tabularcolumns testsetup "
    "testcleanup".split()
)
"""Directives whose source holds nothing a reader sees (navigation, hidden setup code)."""

VERSION_WORDS = {
    "versionadded": "Added in version",
    "versionchanged": "Changed in version",
    "deprecated": "Deprecated since version",
    "versionremoved": "Removed in version",
}

DESCRIPTIONS = frozenset(
    "function class method classmethod staticmethod attribute property data exception "
    "decorator decoratormethod describe object option envvar program cmdoption confval event "
    "role directive automodule autoclass autofunction automethod autoattribute autodata "
    "autoexception autoproperty autodecorator".split()
)
"""Object descriptions: a signature line, then a body (any domain, e.g. ``py:function``).
autodoc's directives are :mod:`.rst_autodoc`'s (read from the package's source); this stand-in,
their signature and the body written in the .rst, is what a page keeps without it."""


class _AnyOptions(dict):
    """An option spec that takes every option as text, for directives we do not know.

    Never empty: docutils reads a directive's options only when its spec is truthy.
    """

    def __init__(self) -> None:
        super().__init__(name=directives.unchanged, class_=directives.unchanged)

    def __missing__(self, key: str) -> object:
        return directives.unchanged


CALLABLE_ROLES = frozenset({"func", "meth"})
"""Roles whose target Sphinx shows with ``()`` (its ``add_function_parentheses``, on by default)."""


def _role_text(name: str, rawtext: str, text: str) -> str:
    """Return what Sphinx shows of a reference, as its Python roles do.

    ``title <target>`` -> title; otherwise the target: a leading ``.`` (search from here)
    dropped, ``~a.b`` -> ``b``, and a function or method followed by ``()``.
    """
    text = nodes.unescape(text)
    titled = re.match(r"^(.+?)\s*<[^<>]+>$", text, re.DOTALL)
    if titled:
        return titled.group(1)
    text = text.lstrip("!").lstrip(".")
    if text.startswith("~"):
        text = text[1:].lstrip(".").rpartition(".")[2]
    if name.rpartition(":")[2] in CALLABLE_ROLES and text and not text.endswith(")"):
        text += "()"
    return text


def sphinx_role(name, rawtext, text, lineno, inliner, options=None, content=None):  # noqa: D103
    shown = _role_text(name, rawtext, text)
    if name in ("pep", "rfc") and shown == nodes.unescape(text).lstrip("!"):
        shown = f"{name.upper()} {shown.partition('#')[0]}"
    base = name.rpartition(":")[2]
    node = nodes.literal if base in CODE_ROLES else nodes.inline
    return [node(rawtext, shown)], []


class Container(Directive):
    """An unknown or content-only directive: its argument as a line, its content parsed."""

    optional_arguments = 1
    final_argument_whitespace = True
    option_spec: ClassVar = _AnyOptions()
    has_content = True

    def run(self) -> list[nodes.Node]:
        """Return the argument (if any) as a paragraph and the parsed content."""
        words = self.arguments[0] if self.arguments else ""
        return [*self._inline(words), *self._content()]

    def _inline(self, words: str) -> list[nodes.Node]:
        """Return ``words`` (inline markup parsed) as a paragraph, or nothing when blank."""
        if not words.strip():
            return []
        parsed, messages = self.state.inline_text(words, self.lineno)
        return [nodes.paragraph(words, "", *parsed), *messages]

    def _content(self) -> list[nodes.Node]:
        if not self.content:
            return []
        box = nodes.container()
        self.state.nested_parse(self.content, self.content_offset, box)
        return list(box.children)


class Dropped(Container):
    """A directive whose source shows nothing on the page (``toctree``, ``index``, ...)."""

    def run(self) -> list[nodes.Node]:
        """Return nothing."""
        return []


class Version(Container):
    """``versionadded`` and friends: "Added in version 2.0: ..." then the content."""

    def run(self) -> list[nodes.Node]:
        """Return Sphinx's sentence for the version, then the content."""
        base = self.name.rpartition(":")[2]
        version, _, rest = (self.arguments[0] if self.arguments else "").partition("\n")
        opening = f"{VERSION_WORDS[base]} {version.strip()}."
        return [*self._inline(f"{opening} {rest.strip()}"), *self._content()]


class SeeAlso(Container):
    """``seealso``: "See also:" and what follows."""

    def run(self) -> list[nodes.Node]:
        """Return "See also: ..." and the content."""
        return [
            *self._inline("See also: " + (self.arguments[0] if self.arguments else "")),
            *self._content(),
        ]


SIGNATURE = "signature"
"""The class of a description's signature paragraph (one a described name's text never joins)."""


class Description(Container):
    """An object description (``py:function:: name(args)``): the signature, then the body."""

    def run(self) -> list[nodes.Node]:
        """Return each signature as a code line, then the content.

        The last signature and the content's first paragraph are one paragraph
        ("`SECRET_KEY`: A secret key that ..."), as a definition list's term and its text are:
        a chunk never ends with a name whose description opens the next one, which never names
        it.
        """
        signatures = (self.arguments[0] if self.arguments else "").splitlines()
        lines = [
            nodes.paragraph("", "", nodes.literal("", s.strip()), classes=[SIGNATURE])
            for s in signatures
        ]
        content = self._content()
        first = content[0] if content else None  # text, not a nested description's signature
        if lines and isinstance(first, nodes.paragraph) and SIGNATURE not in first["classes"]:
            first = content.pop(0)
            lines[-1] += [nodes.Text(": "), *first.children]
        return [*lines, *content]


class CodeBlock(Directive):
    """``code-block`` / ``sourcecode`` / ``code``: the lines exactly as written."""

    optional_arguments = 1
    option_spec: ClassVar = _AnyOptions()
    has_content = True

    def run(self) -> list[nodes.Node]:
        """Return one literal block of the content."""
        code = "\n".join(self.content)
        language = self.arguments[0] if self.arguments else ""
        return [nodes.literal_block(code, code, language=language)]


class LiteralInclude(Directive):
    """``literalinclude``: a file's lines (relative to the including file), or a named warning."""

    required_arguments = 1
    final_argument_whitespace = True
    option_spec: ClassVar = _AnyOptions()

    def run(self) -> list[nodes.Node]:
        """Return the (selected) lines of the file as a literal block."""
        source = self.state_machine.input_lines.source(
            self.lineno - self.state_machine.input_offset - 1
        )
        path = Path(os.path.dirname(os.path.abspath(source))) / self.arguments[0].lstrip("/")
        try:
            text = path.read_text(encoding=self.options.get("encoding") or "utf-8")
        except (OSError, UnicodeDecodeError) as err:
            why = getattr(err, "strerror", None) or err.__class__.__name__
            return [self.reporter.warning(f'literalinclude "{self.arguments[0]}": {why}')]
        code = select_lines(text, self.options)
        language = self.options.get("language") or ""
        return [nodes.literal_block(code, code, language=language)]


def select_lines(text: str, options: dict[str, str]) -> str:
    """Apply literalinclude's ``lines`` / ``start-*`` / ``end-*`` / ``dedent`` options."""
    lines = text.splitlines()
    if options.get("lines"):
        wanted: list[int] = []
        for part in options["lines"].split(","):
            first, _, last = part.strip().partition("-")
            start = int(first) if first else 1
            stop = (int(last) if last else len(lines)) if "-" in part else start
            wanted += range(start, stop + 1)
        lines = [lines[i - 1] for i in wanted if 0 < i <= len(lines)]
    for key, after in (("start-after", True), ("start-at", False)):
        marker = options.get(key)
        found = next((i for i, line in enumerate(lines) if marker and marker in line), None)
        if found is not None:
            lines = lines[found + 1 if after else found :]
    for key, before in (("end-before", True), ("end-at", False)):
        marker = options.get(key)
        found = next((i for i, line in enumerate(lines) if marker and marker in line), None)
        if found is not None:
            lines = lines[: found if before else found + 1]
    if options.get("dedent"):
        cut = int(options["dedent"])
        lines = [line[cut:] if line[:cut].isspace() else line.lstrip() for line in lines]
    lines = ([options["prepend"]] if options.get("prepend") else []) + lines
    return "\n".join(lines + ([options["append"]] if options.get("append") else []))


class Include(misc.Include):
    """docutils' ``include``, which first registers the roles and directives the file names."""

    def run(self) -> list[nodes.Node]:
        """Register what the included file names, then include it as docutils does."""
        source = self.state_machine.input_lines.source(
            self.lineno - self.state_machine.input_offset - 1
        )
        path = Path(os.path.dirname(os.path.abspath(source))) / directives.path(self.arguments[0])
        # A file that cannot be read is reported by docutils, naming it.
        with contextlib.suppress(OSError, UnicodeDecodeError, LookupError):
            register_unknown(path.read_text(encoding=self.options.get("encoding") or "utf-8"))
        return super().run()


def _known_directive(name: str) -> bool:
    return (
        name in directives._directives
        or name in directives._directive_registry
        or (name in _english.directives)
    )


def _known_role(name: str) -> bool:
    return name in roles._roles or name in roles._role_registry or name in _english.roles


def _register_builtin() -> None:
    for name in ("code-block", "sourcecode", "code"):
        directives.register_directive(name, CodeBlock)
    directives.register_directive("literalinclude", LiteralInclude)
    directives.register_directive("seealso", SeeAlso)
    for name in VERSION_WORDS:
        directives.register_directive(name, Version)
    for name in DROPPED_DIRECTIVES:
        directives.register_directive(name, Dropped)
    # Sphinx's default (Python) domain owns these names; docutils' own ``class`` directive is
    # Sphinx's ``rst-class``.
    directives.register_directive("rst-class", misc.Class)
    directives.register_directive("include", Include)
    for name in DESCRIPTIONS:
        directives.register_directive(name, Description)
    # Sphinx's take a title: :pep:`Docstrings <257#what>`. The default role (`x`) too: Sphinx
    # projects set it to a cross-reference role, whose `Title <target>` shows the title.
    for name in ("pep", "rfc", "title-reference"):
        roles.register_local_role(name, sphinx_role)
    for name in ("ref", "doc", "std:ref", "std:doc"):  # the title they point to
        roles.register_local_role(name, reference_role)


_DIRECTIVE_NAME = re.compile(r"^\s*\.\.\s+([\w][\w:.+-]*)\s*::", re.MULTILINE)
_ROLE_NAME = re.compile(r"(?<![\w`]):([\w][\w:.+-]*):`")


def register_unknown(text: str) -> None:
    """Register a stand-in for every role and directive ``text`` names that docutils lacks.

    Also the default role (`x`, no name), which docutils forgets after every document.
    """
    roles.register_local_role("", sphinx_role)
    for name in set(_DIRECTIVE_NAME.findall(text)):
        if _known_directive(name):
            continue
        base = name.rpartition(":")[2]
        if base in VERSION_WORDS:
            cls: type[Directive] = Version
        elif base in DROPPED_DIRECTIVES or name in DROPPED_DIRECTIVES:
            cls = Dropped
        elif base in DESCRIPTIONS:
            cls = Description
        else:
            cls = Container
        directives.register_directive(name, cls)
    for name in set(_ROLE_NAME.findall(text)):
        if not _known_role(name):
            roles.register_local_role(name, sphinx_role)


_register_builtin()
