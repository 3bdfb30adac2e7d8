"""Tolerant parsing of the almost-JSON that LLMs write.

Accepts code fences, prose around the payload, single quotes, Python tuples, trailing commas,
``True/None``, and several top-level objects in a row (GEAR's reader writes one dict for the
entities and another for the triples). Anything else raises :class:`ParseError`.
"""

from __future__ import annotations

import ast
import json
import re
import threading
from typing import Any
from urllib.parse import unquote, urlparse

_FENCE = re.compile(r"```(?:json|python)?\s*(.*?)```", re.S)
_JSON_WORDS = {"true": "True", "false": "False", "null": "None"}
# CPython 3.11 can fail compiling in several threads at once ("AST constructor recursion depth
# mismatch", python/cpython#106905); the extractor parses replies from its worker threads.
_COMPILE = threading.Lock()


class ParseError(ValueError):
    """The reply holds no payload that can be read."""


def _literal(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        pass
    pythonic = re.sub(r"\b(true|false|null)\b", lambda m: _JSON_WORDS[m.group()], text)
    try:
        with _COMPILE:
            return ast.literal_eval(pythonic)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise ParseError(f"not JSON or a Python literal: {text[:80]!r}") from None


def _blocks(text: str) -> list[str]:
    """Return the balanced top-level [...] / {...} blocks of ``text``, outside strings."""
    blocks, depth, start, quote = [], 0, None, None
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = None
        elif ch in "\"'" and depth:
            # An apostrophe inside a word ("Dr. O'Neil") opens no string.
            if not (ch == "'" and i and text[i - 1].isalnum()):
                quote = ch
        elif ch in "[{":
            depth, start = depth + 1, i if depth == 0 else start
        elif ch in "]}" and depth:
            depth -= 1
            if depth == 0 and start is not None:
                blocks.append(text[start : i + 1])
    return blocks


def parse_payload(reply: str) -> list[Any]:
    """Return every readable top-level value of a reply, in order."""
    fenced = _FENCE.findall(reply)
    text = "\n".join(fenced) if fenced else reply
    values = []
    for block in _blocks(text):
        try:
            values.append(_literal(block))
        except ParseError:
            continue
    if not values:
        raise ParseError(f"no JSON payload in reply: {reply[:120]!r}")
    return values


def parse_entities_and_triples(reply: str) -> tuple[list[str], list[tuple[str, str, str]]]:
    """Read GEAR's reader reply: ``{"named_entities": [...]}`` and ``{"triples": [...]}``."""
    merged: dict[str, Any] = {}
    for value in parse_payload(reply):
        if isinstance(value, dict):
            merged.update(value)
    if "named_entities" not in merged and "triples" not in merged:
        raise ParseError("reply has neither named_entities nor triples")
    entities = [str(e) for e in merged.get("named_entities", []) if str(e).strip()]
    triples = [
        (str(t[0]), str(t[1]), str(t[2]))
        for t in merged.get("triples", [])
        if isinstance(t, list | tuple) and len(t) == 3 and all(str(x).strip() for x in t)
    ]
    return entities, triples


def parse_string_list(reply: str) -> list[str]:
    """Read a list of strings (IIER keywords)."""
    for value in parse_payload(reply):
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return [v for v in value if v.strip()]
    raise ParseError("reply has no list of strings")


def parse_entity_links(reply: str) -> list[str]:
    """Read GNN-Ret's ``[[entity, link], ...]`` and return the linked page names."""
    for value in parse_payload(reply):
        pairs = (
            [p for p in value if isinstance(p, list | tuple) and len(p) == 2]
            if isinstance(value, list)
            else []
        )
        if pairs:
            return [link_name(str(link)) or str(entity) for entity, link in pairs]
    raise ParseError("reply has no [entity, link] pairs")


def link_name(link: str) -> str:
    """Map a Wikipedia link to its page name (scheme, host and fragment dropped, decoded)."""
    path = urlparse(link.strip()).path if "://" in link else link.strip()
    name = unquote(path.rstrip("/").rsplit("/wiki/", 1)[-1].rsplit("/", 1)[-1])
    return name.split("#")[0].replace("_", " ").strip()
