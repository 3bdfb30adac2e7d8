"""autodoc's directives read statically: signatures and docstrings from the package's source.

Sphinx's autodoc (``.. autoclass:: pkg.mod.Class``) imports the package and writes what it finds
as reStructuredText. hopgraph runs none of a user's code: it reads the source with griffe (what
mkdocstrings reads with: the files parsed, never imported) and writes the reStructuredText
Sphinx would, which :mod:`.rst_autodoc` parses as any other text: each object's signature as a
description (``class pkg.mod.Class(a: int, b: str = 'x')``) with its docstring as the body
(a class's, else its ``__init__``'s; an attribute's, else its ``#:`` comment), then with
``:members:`` each member the same way, chosen as autodoc chooses them (documented, public,
not imported, ``__all__`` first; ``undoc-members``, ``private-members``, ``special-members``,
``inherited-members``, ``imported-members``, ``exclude-members`` and ``member-order`` read).

Where the source is: the folders given (``--autodoc-source``, repeatable: a package's folder,
or a folder holding packages, ``src/`` included), else beside the docs as in an sdist: the .rst
file's folder or one above it, up to the indexed folder's parent, that holds the package the
object's path starts with (``sphinx/`` for ``sphinx.application.Sphinx``).

An object that cannot be found there is a warning naming the directive (:class:`Missing`; the
.rst file and line are added by the parser), and the page keeps what the .rst itself writes. A
module that does not parse is named, with its line, in the warnings of the directives that
need it: one broken file leaves out its own objects, as a missing include does (``--strict``
stops the load instead).
"""

from __future__ import annotations

import ast
import contextlib
import logging
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from hopgraph.core.errors import InputError

from .autodoc_text import CLASS_LEVEL, describe, kind_of, members_text, target_of

DIRECTIVES = {
    "automodule": "module",
    "autoclass": "class",
    "autoexception": "exception",
    "autofunction": "function",
    "autodecorator": "function",
    "automethod": "method",
    "autoproperty": "property",
    "autoattribute": "attribute",
    "autodata": "data",
}
"""autodoc's directives and the kind of object each documents."""


@dataclass(frozen=True)
class Request:
    """One autodoc directive: what it names, and the module and class it stands in."""

    directive: str
    """Its name without a domain: ``autoclass``."""
    name: str
    """The object as written, without an explicit signature: ``Sphinx.add_builder``."""
    signature: str = ""
    """An explicit signature written after the name, ``(a, b) -> int``: shown instead."""
    options: Mapping[str, str] = field(default_factory=dict)
    module: str = ""
    """The current module (``.. module::``, ``.. currentmodule::``, ``.. automodule::``)."""
    cls: str = ""
    """The class whose description holds the directive, if any."""
    file: Path = Path()
    """The .rst file it is written in."""
    line: int = 0
    """Its line in that file."""


@dataclass(frozen=True)
class Met:
    """One directive a load met: where, what it names, the paths tried and the one found."""

    file: str
    line: int
    directive: str
    name: str
    tried: tuple[str, ...]
    found: str
    """The dotted path read, or "" when none was."""


@dataclass(frozen=True)
class Found:
    """The reStructuredText Sphinx would write for the object, and what it is."""

    lines: list[str]
    members: list[str]
    path: str
    kind: str
    source: str
    """The .py file it was read from (for the parser's line numbers)."""


@dataclass(frozen=True)
class Missing:
    """Why a directive's object could not be read from the source."""

    reason: str
    depth: int = 0
    """How many names of the dotted path were found (the package is the first)."""


@dataclass
class Sources:
    """Where one load finds packages' source, the packages read so far, and what it resolved."""

    given: tuple[Path, ...] = ()
    """``--autodoc-source``: the only places looked in when given."""
    root: Path | None = None
    """The folder being loaded: the search beside the docs goes up to its parent."""
    packages: dict[tuple[Path, str], Any] = field(default_factory=dict)
    """The packages read, by search path and name (dropped when the load ends)."""
    met: list[Met] = field(default_factory=list)
    folders: set[Path] = field(default_factory=set)
    """The package folders objects were read from."""

    @property
    def resolved(self) -> int:
        """Return how many of the directives met were read from the source."""
        return sum(1 for m in self.met if m.found)

    def summary(self) -> str:
        """Return "autodoc: R of N directive(s) resolved (FOLDER)", or "" when none were met."""
        if not self.met:
            return ""
        where = ", ".join(sorted(map(str, self.folders))) or "no package source read"
        return f"autodoc: {self.resolved} of {len(self.met)} directive(s) resolved ({where})"

    def package(self, top: str, file: Path) -> Any:
        """Return the griffe module of the top-level package ``top``, or :class:`Missing`."""
        base = self._base(top, file)
        if isinstance(base, Missing):
            return base
        if (base, top) not in self.packages:
            self.packages[base, top] = _load(base, top, self.packages)
        return self.packages[base, top]

    def _base(self, top: str, file: Path) -> Path | Missing:
        """Return the folder that holds the package ``top`` (a search path), or why none."""
        if self.given:
            bases = [given_base(given, top) for given in self.given]
            found = [b for b in bases if isinstance(b, Path)]
            places = ", ".join(map(str, self.given))
            return found[0] if found else Missing(f"`{top}` is not in {places} (--autodoc-source)")
        folders = beside(file, self.root)
        for folder in folders:
            for base in (folder, folder / "src"):
                if holds(base, top):
                    return base
        return Missing(
            f"no source of `{top}` beside the docs (looked from {folders[0]} up to "
            f"{folders[-1]}); give its folder with --autodoc-source"
        )


_CURRENT: ContextVar[Sources | None] = ContextVar("autodoc_sources", default=None)


def check_source(path: str | Path) -> Path:
    """Return ``--autodoc-source`` resolved; InputError when it is not a folder or a .py file."""
    given = Path(path)
    if not given.exists():
        raise InputError(
            f"{given}: no such folder (--autodoc-source)",
            "give the package's source: its folder, or the folder holding it (src/)",
        )
    if not given.is_dir() and given.suffix != ".py":
        raise InputError(
            f"{given}: not a folder or a .py file (--autodoc-source)",
            "give the package's source: its folder, or the folder holding it (src/)",
        )
    return given.resolve()


@contextlib.contextmanager
def sourcing(given: Sequence[str | Path] | str | Path | None, root: Path) -> Iterator[Sources]:
    """Resolve the autodoc directives of the pages parsed within from ``given`` or beside ``root``.

    ``given`` (one path or several) is checked first (InputError for one that is not there);
    the packages read are kept for the whole load, and the yielded :class:`Sources` records
    every directive met.
    """
    paths = [given] if isinstance(given, str | Path) else list(given or ())
    sources = Sources(tuple(check_source(path) for path in paths), root.resolve())
    token = _CURRENT.set(sources)
    try:
        yield sources
    finally:
        _CURRENT.reset(token)
        sources.packages.clear()  # griffe's models of whole packages: not kept with the report


def given_base(given: Path, top: str) -> Path | Missing:
    """Return the search path of ``top`` in ``--autodoc-source`` (the package, or holding it)."""
    if (given / "__init__.py").is_file() and given.name == top:
        return given.parent
    if given.suffix == ".py" and given.stem == top:
        return given.parent
    for base in (given, given / "src"):
        if holds(base, top):
            return base
    return Missing(f"`{top}` is not in {given}")


def holds(base: Path, top: str) -> bool:
    """Tell whether the folder ``base`` holds the package or module ``top``.

    A namespace package (``sphinxcontrib/``, no ``__init__.py``) counts when it holds a
    package or a module.
    """
    folder = base / top
    if (folder / "__init__.py").is_file() or (base / f"{top}.py").is_file():
        return True
    inside = folder.glob("*/__init__.py") if folder.is_dir() else iter(())
    return next(inside, None) is not None or any(folder.glob("*.py"))


def beside(file: Path, root: Path | None) -> list[Path]:
    """Return the folders looked in beside the docs: ``file``'s folder and those above it.

    Up to the loaded folder's parent (the sdist's root when the docs folder is loaded); without
    a loaded folder, the file's folder and its parent.
    """
    here = file.resolve().parent
    chain = [here, *here.parents]
    if root is not None and (root == here or root in here.parents):
        return chain[: chain.index(root) + 2]
    return chain[:2]


def document(request: Request) -> Found | Missing:
    """Return the reStructuredText of the object ``request`` names, or why it cannot be read."""
    sources = _CURRENT.get() or Sources()
    reasons: list[tuple[int, Missing]] = []
    written = len(request.name.split("."))
    tried = candidates(request)
    met = partial(Met, str(request.file), request.line, request.directive, request.name)
    for path in tried:
        found = _found(path, request, sources)
        if isinstance(found, Found):
            sources.met.append(met(tuple(tried), path))
            return found
        # the reading that finds most of what is written tells why (``Class.meth`` in the
        # current module), else the first, the most specific (``pkg.mod.f`` as written)
        reasons.append((max(0, found.depth - (len(path.split(".")) - written)), found))
    sources.met.append(met(tuple(tried), ""))
    if not reasons:
        return Missing(f"`{request.name}` names no object")
    return max(reasons, key=lambda r: r[0])[1]  # max: the first of the best


def candidates(request: Request) -> list[str]:
    """Return the dotted paths the name may stand for, most specific first, as Sphinx tries."""
    name, module, cls = request.name, request.module, request.cls
    if DIRECTIVES.get(request.directive) == "module" or not name:
        return [name] if name else []
    if "." in name:  # absolute, or (``Class.method``) in the current module
        return list(dict.fromkeys([name, *([f"{module}.{name}"] if module else [])]))
    out: list[str] = []
    if DIRECTIVES.get(request.directive) in CLASS_LEVEL and cls:
        out += [f"{module}.{cls}.{name}"] if module else []
        out.append(f"{cls}.{name}")
    out += [f"{module}.{name}"] if module else []
    return list(dict.fromkeys([*out, name]))


def _found(path: str, request: Request, sources: Sources) -> Found | Missing:
    """Return the object at the dotted ``path`` rendered, or why it is not there."""
    top, _, rest = path.partition(".")
    package = sources.package(top, request.file)
    if isinstance(package, Missing):  # a package that does not parse explains all below it
        return Missing(package.reason, len(path.split(".")) if package.depth else 0)
    parts = rest.split(".") if rest else []
    obj, depth = walk(package, parts)
    target = target_of(obj) if depth == len(parts) else None
    if target is None and depth == len(parts) and _grafted(package, obj):
        target = target_of(obj)
    if target is None:
        if depth == len(parts):
            why = f"`{path}` is imported from `{obj.target_path}`, not in the source"
            return Missing(why, 1 + depth)
        base, folder = _where(package)
        why = unparsable(base, path.split(".")) or f"`{path}` is not in {folder}"
        return Missing(why, 1 + depth)
    sources.folders.add(_where(package)[1])
    kind = kind_of(target, DIRECTIVES.get(request.directive, "data"))
    within = request.cls and "." not in request.name and getattr(target.parent, "is_class", 0)
    shown = request.name if within else path  # as Sphinx: a member in its class by its name
    lines = describe(target, kind, shown, request.signature, request.options)
    members = members_text(target, kind, request.options, {path})
    return Found(lines, members, path, kind, str(target.filepath))


def _grafted(package: Any, obj: Any, most: int = 8) -> bool:
    """Load the modules an import chain from ``obj`` leads to in folders without __init__.py.

    Python imports a module from such a folder inside a package (``flask/sansio/``: PEP 420's
    namespace subpackage, as Python treats it), and Sphinx documents what Python imports; griffe
    skips those folders. So where a re-export (``from .sansio.blueprints import X as X``) does
    not resolve, its target's module is read and put in place, and the chain followed on.
    """
    import griffe

    grafted = False
    for _ in range(most):  # each step of the chain may need a module of its own
        current = obj
        try:
            while current.is_alias:
                current = current.target
            return grafted
        except (griffe.AliasResolutionError, griffe.CyclicAliasError):
            if not _graft(package, current.target_path):
                return False
            grafted = True
    return False


def _graft(package: Any, dotted: str) -> bool:
    """Read the module of ``dotted`` below ``package``'s folder into its tree; False if none."""
    import griffe

    base, _ = _where(package)
    parts = dotted.split(".")
    if parts[0] != package.name:
        return False
    for n in range(len(parts) - 1, 1, -1):  # the longest module path first
        file = base.joinpath(*parts[:n]).with_suffix(".py")
        if file.is_file():
            break
    else:
        return False
    parent = package
    for i in range(1, n - 1):  # the folders between: namespace subpackages
        if parts[i] not in parent.members:
            parent.set_member(
                parts[i], griffe.Module(parts[i], filepath=[base.joinpath(*parts[: i + 1])])
            )
        parent = parent.members[parts[i]]
    if parts[n - 1] in parent.members:
        return False  # read already: the chain breaks elsewhere
    try:
        code = file.read_text(encoding="utf-8")
        module = griffe.visit(
            parts[n - 1],
            file,
            code,
            parent=parent,
            lines_collection=package.lines_collection,
            modules_collection=package.modules_collection,
        )
    except (OSError, SyntaxError, UnicodeDecodeError, griffe.GriffeError):
        return False
    parent.set_member(parts[n - 1], module)
    return True


def _where(package: Any) -> tuple[Path, Path]:
    """Return a top-level package's search path and its own folder (or file, for a module)."""
    if package.is_namespace_package:  # its filepath: the list of its folders
        folder = Path(package.filepath[0])
        return folder.parent, folder
    file = Path(package.filepath)
    return (file.parent.parent, file.parent) if package.is_package else (file.parent, file)


def _load(base: Path, top: str, read: dict[tuple[Path, str], Any]) -> Any:
    """Read the package ``top`` below ``base`` with griffe (parsed, never imported).

    The packages ``read`` before share its collection of modules, so that a class whose base
    is in another package (``sphinxcontrib``'s builders, from ``sphinx``) inherits its members.
    """
    import griffe

    shared = next((p for p in read.values() if not isinstance(p, Missing)), None)
    loader = griffe.GriffeLoader(
        search_paths=[base],
        allow_inspection=False,
        modules_collection=shared.modules_collection if shared else None,
        lines_collection=shared.lines_collection if shared else None,
    )
    quiet = logging.getLogger("griffe")
    was, quiet.disabled = quiet.disabled, True  # its tracebacks: the warnings say it shorter
    try:
        return loader.load(top)
    except (ImportError, OSError, SyntaxError, UnicodeDecodeError, griffe.GriffeError) as err:
        why = unparsable(base, [top]) or f"{err.__class__.__name__}: {err}"
        return Missing(f"the source of `{top}` in {base} cannot be read ({why})", 1)
    finally:
        quiet.disabled = was


def walk(obj: Any, parts: list[str]) -> tuple[Any, int]:
    """Return the member at ``parts`` below ``obj`` (inherited ones too), or the last found.

    The count says how many of ``parts`` were found: all of them when the member is there.
    """
    import griffe

    for depth, part in enumerate(parts):
        try:
            found = obj.members.get(part)
            if found is None and obj.is_class:
                found = obj.all_members.get(part)
        except (griffe.AliasResolutionError, griffe.CyclicAliasError):
            found = None
        if found is None:
            return obj, depth
        obj = found
    return obj, len(parts)


def unparsable(base: Path, parts: list[str]) -> str | None:
    """Return "FILE does not parse (line N: why)" for the first module on the path that fails."""
    for i in range(1, len(parts) + 1):
        folder = base.joinpath(*parts[:i])
        for file in (folder / "__init__.py", folder.with_suffix(".py")):
            try:
                ast.parse(file.read_bytes(), str(file))
            except SyntaxError as err:
                return f"{file} does not parse (line {err.lineno}: {err.msg})"
            except (OSError, ValueError):  # not there (ValueError: NUL bytes, not Python)
                continue
    return None
