"""Metadata filters: what ``--where``, the MCP and LangChain tools and the agents accept.

A filter is a mapping from a field to a value (equal) or to operators, as in Chroma's ``where``:

==================  ====================  ==================================================
command line        JSON                  keeps the chunks whose field ...
==================  ====================  ==================================================
``key=value``       ``{"key": "value"}``  equals value (``{"$eq": "value"}`` too)
``key!=value``      ``{"$ne": "value"}``  differs from value, or is missing
``key in a|b|c``    ``{"$in": [...]}``    equals one of them
``key*=text``       ``{"$contains": t}``  contains text (any case)
``key^=text``       ``{"$prefix": t}``    starts with text
``key~=item``       ``{"$has": "item"}``  has item as one of its parts (any case): one heading
(or ``key~item``)
                                          of a ``section`` path ("A > B > C") at any level, one
                                          entry of a list field ("setup, pip")
==================  ====================  ==================================================

Fields are ``doc_id``, ``title``, ``source``, ``section`` and each document's own metadata,
compared as text. A ``section`` path starts with its page's title (schema.Chunk.section_path),
so ``section~=Signals`` finds the page called Signals as well as a heading called so; values are
compared as text (booleans as ``true`` / ``false``). Every condition must hold. A malformed
filter raises :class:`InputError` that shows this syntax.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hopgraph.core.errors import InputError

WhereValue = str | list[str] | dict[str, str | list[str]]
Where = Mapping[str, WhereValue]
"""A filter as JSON: field -> value, or field -> {operator: value}."""

SYNTAX = (
    "filters: key=value, key!=value, 'key in a|b|c', key*=text (contains), key^=text (starts "
    "with), key~=item (one heading of section, or one entry of a list field); as JSON: "
    '{"key": "value"} or {"key": {"$ne" | "$in" | "$contains" | "$prefix" | "$has": ...}}'
)
JSON_HELP = (
    'only passages that pass this filter: {"lang": "en"} (equal), or a field\'s operators: '
    '{"section": {"$has": "Signals"}} (a heading at any level), {"title": {"$in": ["A", "B"]}}, '
    '{"source": {"$prefix": "api/"}} (a path below the indexed folder), '
    '{"title": {"$contains": "flask"}}, {"lang": {"$ne": '
    '"de"}}; fields: doc_id, title, source, section or a document\'s own metadata; all must hold'
)
"""The filter's description for tool schemas (MCP, LangChain, the LangGraph server)."""
OPERATORS = ("$eq", "$ne", "$in", "$contains", "$prefix", "$has")
_PARTS = re.compile(r"\s*>\s*|\s*,\s*")
"""What separates the parts of a field: " > " in a section path, ", " in a list field."""


@dataclass(frozen=True)
class Condition:
    """One test on one field: ``operator`` applied to ``value`` (a tuple for ``$in``)."""

    field: str
    operator: str
    value: str | tuple[str, ...]

    def holds(self, text: str | None) -> bool:
        """Tell whether a field's text (None: the field is missing) passes this test."""
        if text is None:
            return self.operator == "$ne"
        value = self.value
        if self.operator == "$in":
            return text in value
        assert isinstance(value, str)
        if self.operator == "$eq":
            return text == value
        if self.operator == "$ne":
            return text != value
        if self.operator == "$contains":
            return value.casefold() in text.casefold()
        if self.operator == "$prefix":
            return text.startswith(value)
        return value.casefold() in {p.casefold() for p in _PARTS.split(text)}


def conditions(where: Where) -> list[Condition]:
    """Return a JSON filter's conditions; raise InputError (showing the syntax) when malformed."""
    if not isinstance(where, Mapping):
        raise _malformed(f"a filter is a JSON object, not {type(where).__name__}")
    out: list[Condition] = []
    for key, spec in where.items():
        if not isinstance(key, str) or not key.strip():
            raise _malformed(f"field name {key!r} is empty or not text")
        if isinstance(spec, Mapping):
            if not spec:
                raise _malformed(f"{key!r}: no operator given")
            out += [_condition(key, op, value) for op, value in spec.items()]
        else:
            out.append(_condition(key, "$eq", spec))
    return out


def checked_where(value: object) -> dict[str, WhereValue] | None:
    """Return a filter with its values as text, checked as the CLI checks one (InputError).

    Before pydantic's own check, which would answer ``{"lang": 5}`` with a dump of three
    validation errors where the CLI and MCP say what is wrong (the LangChain retriever and tools).
    """
    if value is None:
        return None
    checked = conditions(value)  # type: ignore[arg-type]
    where: dict[str, dict[str, str | list[str]]] = {}
    for condition in checked:
        text = condition.value
        where.setdefault(condition.field, {})[condition.operator] = (
            list(text) if isinstance(text, tuple) else text
        )
    return where  # type: ignore[return-value]


def joined_where(a: Where | None, b: Where | None) -> dict[str, WhereValue] | None:
    """Return two filters as one that holds every condition of both (None: neither has one).

    A field tested twice by the same operator is an InputError.
    """
    out: dict[str, dict[str, str | list[str]]] = {}
    for where in (checked_where(a), checked_where(b)):
        for key, tests in (where or {}).items():
            for operator, value in tests.items():  # type: ignore[union-attr]
                if operator in out.get(key, {}):
                    raise InputError(
                        f"filters: {key!r} is tested by {operator} twice",
                        "give one test per operator and field ($in for several values)",
                    )
                out.setdefault(key, {})[operator] = value
    return checked_where(out) if out else None


def _condition(key: str, operator: str, value: object) -> Condition:
    if operator not in OPERATORS:
        raise _malformed(f"{key!r}: unknown operator {operator!r} (one of {', '.join(OPERATORS)})")
    if operator == "$in":
        if not isinstance(value, list | tuple) or not value:
            raise _malformed(f"{key!r}: $in takes a non-empty list of values")
        return Condition(key, operator, tuple(_text(key, v) for v in value))
    return Condition(key, operator, _text(key, value))


def _text(key: str, value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str) and not value.strip():
        # "contains nothing" would keep every chunk and "has nothing" none, silently
        raise _malformed(f"{key!r}: the value is empty; give the text to test for")
    if isinstance(value, str | int | float):
        return str(value)
    raise _malformed(f"{key!r}: {value!r} is not a text, number or true/false value")


def _malformed(why: str) -> InputError:
    return InputError(f"malformed filter: {why}", SYNTAX)


_CLI = re.compile(r"^\s*([^\s=!*^~]+)\s*(!=|\*=|\^=|~=|~|=|\s+in\s+)(.*)$", re.DOTALL)
_CLI_OPERATORS = {
    "=": "$eq",
    "!=": "$ne",
    "*=": "$contains",
    "^=": "$prefix",
    "~=": "$has",
    "~": "$has",
}


def parse_cli(options: Sequence[str] | None) -> dict[str, WhereValue] | None:
    """Parse ``--where`` options into a JSON filter (None when there are none)."""
    where: dict[str, dict[str, str | list[str]]] = {}
    for option in options or ():
        found = _CLI.match(option)
        if not found or (found.group(2) == "=" and not found.group(1)):
            raise InputError(f"--where {option!r}: not a filter", SYNTAX)
        key, symbol, value = found.group(1), found.group(2).strip(), found.group(3).strip()
        operator = "$in" if symbol == "in" else _CLI_OPERATORS[symbol]
        if operator in where.get(key, {}):
            raise InputError(
                f"--where {option!r}: a second {symbol!r} test on {key!r}",
                "give one test per operator and field ('key in a|b' for several values)",
            )
        if symbol == "in":
            items = [v.strip() for v in value.split("|") if v.strip()]
            if not items:
                raise InputError(f"--where {option!r}: 'in' needs values a|b|c", SYNTAX)
            where.setdefault(key, {})["$in"] = items
        else:
            where.setdefault(key, {})[operator] = value
    return dict(where) or None
