"""autodoc's directives for docutils: the object read from source (:mod:`.autodoc`) or a warning.

``.. autoclass:: Name`` and the rest become what Sphinx writes for them, parsed like the page
around them: the signature as a description, the docstring's reStructuredText as its body, then
what the .rst writes inside the directive, then ``:members:``. An object that cannot be read
keeps what the .rst writes and gives a warning naming the directive ("autodoc: ...", which the
parser reports with the file and line).

A bare name is found as Sphinx finds it: in the current module (``.. module::``,
``.. currentmodule::``, their ``py:`` forms and ``.. automodule::`` set it for the rest of the
page), and for methods and attributes in the class whose description holds them
(``.. autoclass::``, ``.. class::``, ``.. py:class::``, exceptions too).
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList

from . import autodoc
from .rst_sphinx import Description, Dropped, register_unknown

WARNING = "autodoc: "
"""How an autodoc warning starts: the parser reports these with the include problems."""
MODULE_DIRECTIVES = ("module", "currentmodule", "py:module", "py:currentmodule")
CLASS_DIRECTIVES = ("class", "py:class", "exception", "py:exception")
_WRITTEN = re.compile(r"^\s*(?:(?:class|exception)\s+)?([\w.]+)\s*(.*)$", re.DOTALL)
"""A signature: an optional kind word, the dotted name, then the rest (``(args) -> type``)."""


@dataclass
class _Place:
    """The module and class a bare name is looked up in, at this point of the page."""

    module: str = ""
    cls: str = ""


def _place(memo: Any) -> _Place:
    """Return the page's place, kept on docutils' per-document memo (shared by nested parses)."""
    place = getattr(memo, "hopgraph_autodoc", None)
    if place is None:
        place = _Place()
        memo.hopgraph_autodoc = place
    return place


@contextmanager
def _in_class(memo: Any, cls: str) -> Any:
    """Look bare method and attribute names up in ``cls`` within."""
    place = _place(memo)
    outer, place.cls = place.cls, cls
    try:
        yield
    finally:
        place.cls = outer


def split_written(argument: str) -> tuple[str, str]:
    """Return a directive's (dotted name, explicit signature) from its argument."""
    found = _WRITTEN.match(" ".join(argument.split()))
    return (found.group(1), found.group(2).strip()) if found else (argument.strip(), "")


class Autodoc(Description):
    """``automodule``, ``autoclass``, ``autofunction``, ...: the object as Sphinx shows it."""

    def run(self) -> list[nodes.Node]:
        """Return the object's description, the directive's content, then its members."""
        base = self.name.rpartition(":")[2]
        written = " ".join((self.arguments[0] if self.arguments else "").split())
        name, signature = split_written(written)
        place = _place(self.state.memo)
        file, line = self._where()
        request = autodoc.Request(
            base, name, signature, dict(self.options), place.module, place.cls, file, line
        )
        found = autodoc.document(request)
        if autodoc.DIRECTIVES[base] == "module":
            place.module = name  # as Sphinx's py:module: for the rest of the page
        if isinstance(found, autodoc.Missing):
            warning = self.reporter.warning(
                f"{WARNING}`.. {self.name}:: {written}`: {found.reason}", line=self.lineno
            )
            with _in_class(self.state.memo, name if base in ("autoclass", "autoexception") else ""):
                return [warning, *super().run()]
        head = self._parse(found.lines, found.source)
        is_class = found.kind in ("class", "exception")
        with _in_class(self.state.memo, found.path if is_class else place.cls):
            content = self._content()
        return [*head, *content, *self._parse(found.members, found.source)]

    def _where(self) -> tuple[Path, int]:
        """Return the file the directive is written in (an included file's own) and its line."""
        source, offset = self.state_machine.input_lines.info(
            self.lineno - self.state_machine.input_offset - 1
        )
        return Path(source or ""), (offset or 0) + 1

    def _parse(self, lines: list[str], source: str) -> list[nodes.Node]:
        """Parse generated reStructuredText (a docstring's roles and directives known first)."""
        if not lines:
            return []
        register_unknown("\n".join(lines))
        box = nodes.container()
        self.state.nested_parse(StringList(lines, source=source), 0, box)
        return list(box.children)


class CurrentModule(Dropped):
    """``module`` / ``currentmodule``: nothing on the page; bare names are looked up in it."""

    def run(self) -> list[nodes.Node]:
        """Set the current module (``None``: none) and return nothing."""
        name = (self.arguments[0] if self.arguments else "").strip()
        _place(self.state.memo).module = "" if name == "None" else name
        return []


class ClassDescription(Description):
    """A class's description written in the .rst: its content's bare names are its members."""

    def run(self) -> list[nodes.Node]:
        """Return the description, its content parsed within the class."""
        first = (self.arguments[0] if self.arguments else "").partition("\n")[0]
        with _in_class(self.state.memo, split_written(first)[0]):
            return super().run()


def _register() -> None:
    for name in autodoc.DIRECTIVES:
        directives.register_directive(name, Autodoc)
    for name in MODULE_DIRECTIVES:
        directives.register_directive(name, CurrentModule)
    for name in CLASS_DIRECTIVES:
        directives.register_directive(name, ClassDescription)


_register()
