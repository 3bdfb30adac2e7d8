"""An object autodoc found, as the reStructuredText Sphinx writes: signature, docstring, members.

What :mod:`.autodoc` finds (read with griffe, never imported) is described here: a class's or
function's signature, its docstring (inherited, or an attribute's ``#:`` comment), and with
``:members:`` its members, chosen and ordered as autodoc's options say.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CLASS_LEVEL = frozenset({"method", "property", "attribute"})
"""Kinds whose bare name is looked up in the class the directive stands in."""


VALUE_CHARS = 120
"""An attribute's value is shown up to this many characters (a long literal is cut, "...")."""


_ORDER = {"exception": 10, "class": 20, "function": 30, "data": 40, "method": 50}
"""``member-order: groupwise``: autodoc's groups (the rest, attributes and properties, last)."""


def target_of(obj: Any) -> Any:
    """Return what ``obj`` stands for: itself, or an import's target when it is in the source."""
    import griffe

    if not obj.is_alias:
        return obj
    try:
        return obj.final_target
    except (griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None


def kind_of(obj: Any, asked: str) -> str:
    """Return the kind Sphinx shows ``obj`` as: class, exception, function, method, ...."""
    if obj.is_module:
        return "module"
    if obj.is_class:
        return "exception" if asked == "exception" or _is_exception(obj) else "class"
    in_class = obj.parent is not None and obj.parent.is_class
    if "property" in obj.labels:  # griffe reads a property as an attribute of its return type
        return "property"
    if obj.is_function:
        return "method" if in_class else "function"
    return "attribute" if in_class else "data"


def _is_exception(cls: Any) -> bool:
    """Tell whether a class derives from an exception, by its bases' names (not imported)."""
    names = [str(base).rpartition(".")[2] for base in cls.bases]
    return any(n.endswith(("Error", "Exception", "Warning")) for n in names)


def signature(obj: Any, kind: str, shown: str, written: str = "") -> str:
    """Return the signature line Sphinx shows: ``class a.B(x: int)``, ``b.f(y) -> str``, ...."""
    if kind in ("class", "exception"):
        text = (shown + written) if written else (obj.signature(name=shown) or shown)
        return f"{kind} {text}"
    if kind in ("function", "method"):
        prefixes = [p for p in ("async", "classmethod", "staticmethod") if p in obj.labels]
        words = " ".join(p.replace("staticmethod", "static") for p in prefixes)
        text = (shown + written) if written else obj.signature(name=shown)
        return f"{words} {text}".strip()
    if kind == "property":
        returns = getattr(obj, "annotation", None) or getattr(obj, "returns", None)
        return f"property {shown}" + (f": {returns}" if returns else "")
    annotation = getattr(obj, "annotation", None)  # a type alias has none
    annotation = f": {annotation}" if annotation is not None else ""
    value = "" if obj.value is None or instance_only(obj) else " ".join(str(obj.value).split())
    if len(value) > VALUE_CHARS:
        value = value[: VALUE_CHARS - 3] + "..."
    return f"{shown}{annotation}" + (f" = {value}" if value else "")


def docstring(obj: Any, kind: str) -> str:
    """Return the object's documentation: its docstring, else what autodoc falls back to."""
    text = obj.docstring.value if obj.docstring else ""
    if not text and kind in ("class", "exception"):
        init = obj.members.get("__init__")
        text = init.docstring.value if init is not None and init.docstring else ""
    if not text and kind in ("attribute", "data"):
        text = comment_doc(obj)
    if not text and kind in CLASS_LEVEL:  # autodoc_inherit_docstrings, on by default
        text = next(filter(None, (docstring(o, kind) for o in overridden(obj))), "")
    return text


def overridden(obj: Any) -> list[Any]:
    """Return the members of the same name in the bases of ``obj``'s class, nearest first."""
    import griffe

    try:
        bases = obj.parent.mro() if obj.parent is not None and obj.parent.is_class else []
    except (griffe.AliasResolutionError, griffe.CyclicAliasError, ValueError):
        return []  # a base outside the source: nothing to inherit from
    found = [base.members.get(obj.name) for base in bases]
    return [m for m in found if m is not None and not m.is_alias]


def comment_doc(obj: Any) -> str:
    """Return an attribute's ``#:`` comment: on the lines just above it, or after it."""
    try:
        lines = obj.lines_collection[obj.filepath]
    except (KeyError, TypeError):
        return ""
    at = (obj.lineno or 0) - 1
    if not 0 <= at < len(lines):
        return ""
    _, mark, after = lines[at].partition("#: ")
    if mark:
        return after.strip()
    found: list[str] = []
    for line in reversed(lines[:at]):
        if not line.strip().startswith("#:"):
            break
        found.insert(0, line.strip()[2:].removeprefix(" "))
    return "\n".join(found)


def describe(
    obj: Any, kind: str, shown: str, written: str = "", options: Mapping[str, str] | None = None
) -> list[str]:
    """Return the object as reStructuredText: a ``py:`` description of it, its docstring inside.

    A module has no signature: its docstring stands alone.
    """
    body = docstring(obj, kind).splitlines()
    if kind == "module":
        return [*body, ""]
    line = signature(obj, kind, shown, written)
    options = options or {}
    if kind in ("attribute", "data") and "annotation" in options:
        line = f"{shown} {options['annotation']}".strip()
    elif kind in ("attribute", "data") and "no-value" in options:
        line = line.partition(" = ")[0]
    directive = {"exception": "exception", "property": "property"}.get(kind, kind)
    return [f".. py:{directive}:: {line}", "", *(f"   {b}" if b.strip() else "" for b in body), ""]


def members_text(obj: Any, kind: str, options: Mapping[str, str], seen: set[str]) -> list[str]:
    """Return the reStructuredText of the members ``:members:`` asks for (classes' in turn)."""
    lines: list[str] = []
    for name, child in members(obj, kind, options):
        target = target_of(child)
        if target is None or target.path in seen:
            continue
        child_kind = kind_of(target, "data")
        shown = f"{obj.path}.{name}" if kind == "module" else name  # as Sphinx shows them
        lines += describe(target, child_kind, shown)
        if child_kind in ("class", "exception"):
            lines += members_text(target, child_kind, options, {*seen, target.path})
    return lines


def members(obj: Any, kind: str, options: Mapping[str, str]) -> list[tuple[str, Any]]:
    """Return the (name, member) pairs ``:members:`` documents, in ``member-order``."""
    spec = options.get("members")
    if spec is None or kind not in ("module", "class", "exception"):
        return []
    inherited = "inherited-members" in options and obj.is_class
    table = dict(obj.all_members if inherited else obj.members)
    named = names(spec)
    if named:
        return [(n, table[n]) for n in named if n in table]
    order = list(table)
    if kind == "module" and obj.exports is not None and "ignore-module-all" not in options:
        order = [str(e).rpartition(".")[2] for e in obj.exports]
    excluded = set(names(options.get("exclude-members") or ""))
    kept = [
        (n, table[n])
        for n in order
        if n in table and n not in excluded and wanted(n, table[n], kind, options)
    ]
    return ordered(kept, options.get("member-order") or "alphabetical")


def names(spec: str) -> list[str]:
    """Split an option's list of names (``a, b``)."""
    return [n.strip() for n in spec.split(",") if n.strip()]


def wanted(name: str, child: Any, kind: str, options: Mapping[str, str]) -> bool:
    """Tell whether an unnamed member is documented, as autodoc's defaults and options say."""
    if child.is_alias and kind == "module" and "imported-members" not in options:
        return False  # imported into the module, documented where it is defined
    target = target_of(child)
    if target is None or target.is_module:
        return False
    if name.startswith("__") and name.endswith("__"):
        return listed(name, options, "special-members")
    if name.startswith("_"):
        return listed(name, options, "private-members")
    documented = bool(docstring(target, kind_of(target, "data")))
    # autodoc finds an attribute set in __init__ only through its documentation
    return documented or ("undoc-members" in options and not instance_only(target))


def instance_only(obj: Any) -> bool:
    """Tell whether ``obj`` is an attribute set on instances only (``self.x = ...``)."""
    labels = getattr(obj, "labels", set())
    return "instance-attribute" in labels and "class-attribute" not in labels


def listed(name: str, options: Mapping[str, str], key: str) -> bool:
    """Tell whether the option ``key`` is given bare (all) or names ``name``."""
    return key in options and (not names(options[key]) or name in names(options[key]))


def ordered(pairs: list[tuple[str, Any]], order: str) -> list[tuple[str, Any]]:
    """Return the members in autodoc's ``member-order``: alphabetical, bysource or groupwise."""
    if order == "bysource":
        return pairs
    if order == "groupwise":
        rank = {n: _ORDER.get(kind_of(target_of(c), "data"), 60) for n, c in pairs}
        return sorted(pairs, key=lambda p: (rank[p[0]], p[0]))
    return sorted(pairs, key=lambda p: p[0])
