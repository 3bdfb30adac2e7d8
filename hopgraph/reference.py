"""The documentation's CLI and configuration references, generated from the code.

    python -m hopgraph.reference            # print both pages' generated parts
    python -m hopgraph.reference --write    # put them between their markers in docs/
    python -m hopgraph.reference --check    # exit 1 when a page differs (the unit suite runs it)

The CLI reference (docs/cli.md) is every command's ``--help``, as the parsers print it at 100
columns; the configuration reference (docs/configuration.md) is every field of the settings
models: its variable, its key in ``hopgraph.toml``, its type, default and description. So the
pages cannot drift from the code: a new flag or setting fails the check until it is written.
"""

from __future__ import annotations

import argparse
import os
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo

from hopgraph.evals.doc_markers import replaced as between_markers

ROOT = Path(__file__).resolve().parent.parent
COLUMNS = "100"
"""The width argparse wraps help to (it reads $COLUMNS): the same page on every terminal."""
PAGES = {"cli": "docs/cli.md", "configuration": "docs/configuration.md", "mcp": "docs/serving.md"}


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Yield every parser below ``parser`` (depth first), with its command words."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _commands(child, (*path, name))


def cli_reference() -> str:
    """Render every command's help by group, as ``hopgraph COMMAND --help`` prints it."""
    from hopgraph.cli import build_parser
    from hopgraph.cli.parser import COMMAND_GROUPS

    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = COLUMNS
    try:
        helps = {words: _help(words, p) for words, p in _commands(build_parser())}
        top = [w for w in helps if len(w) == 1]
        grouped = [c for _, commands in COMMAND_GROUPS.values() for c in commands]
        if sorted(grouped) != sorted(w[0] for w in top):
            raise SystemExit(
                f"hopgraph.cli.parser.COMMAND_GROUPS names {sorted(grouped)}, the parser has "
                f"{sorted(w[0] for w in top)}: give each command one group"
            )
        parts = [helps[()]]
        for group, (summary, commands) in COMMAND_GROUPS.items():
            parts.append(f"## {group}\n\n{summary}")
            parts += [helps[w] for c in commands for w in helps if w and w[0] == c]
        return "\n\n".join(parts)
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def _help(words: tuple[str, ...], parser: argparse.ArgumentParser) -> str:
    """Return one command's section: its heading and its ``--help``."""
    title = " ".join(("hopgraph", *words))
    heading = "##" if not words else "###" + "#" * (len(words) - 1)
    return f"{heading} `{title}`\n\n```text\n{parser.format_help().rstrip()}\n```"


def _type(annotation: Any) -> str:
    """Name a field's type as a user writes its value."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return " \\| ".join(f"`{a}`" for a in args)
    if origin in (Union, types.UnionType):
        kinds = [_type(a) for a in args if a is not type(None)]
        return " or ".join(kinds) + (" (optional)" if type(None) in args else "")
    if origin in (list, tuple):
        return f"list of {_type(args[0])}"
    names = {str: "text", int: "integer", float: "number", bool: "true / false", Path: "path"}
    if annotation is SecretStr:
        return "secret text"
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _default(field: FieldInfo) -> str:
    value = field.get_default(call_default_factory=True)
    if value is None or value == [] or value == ():
        return "–"
    if isinstance(value, tuple | list):
        return ", ".join(f"`{v}`" for v in value)
    return f"`{value}`"


def _table(model: type[BaseModel], variables: bool) -> str:
    head = ["setting", *(["variable"] if variables else []), "type", "default", "meaning"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, field in model.model_fields.items():
        cells = [f"`{name}`", *([f"`HOPGRAPH_{name.upper()}`"] if variables else [])]
        cells += [_type(field.annotation), _default(field), (field.description or "").strip()]
        lines.append("| " + " | ".join(c.replace("\n", " ") for c in cells) + " |")
    return "\n".join(lines)


def configuration_reference() -> str:
    """Render the settings models' fields as tables."""
    from hopgraph.core.settings import IndexSettings, Settings
    from hopgraph.graph_store.index.graph_build import GraphSettings

    return "\n\n".join(
        [
            "### Settings (`hopgraph.toml`, `HOPGRAPH_*`, flags)",
            _table(Settings, variables=True),
            "### Index settings (chosen when an index is built; kept in its manifest)",
            _table(IndexSettings, variables=False),
            "### Graph settings (`hopgraph graph build`; kept in the manifest)",
            _table(GraphSettings, variables=False),
        ]
    )


def mcp_reference() -> str:
    """Render every MCP tool's arguments from the JSON schemas the server sends its clients.

    ``retrieve``'s methods are all those that run without an LLM; a server offers the ones
    needing trained weights only where the index has them.
    """
    import asyncio

    from hopgraph.mcp.server import build_server
    from hopgraph.tools.shared.registry import RETRIEVERS

    offered = [n for n, c in RETRIEVERS.items() if not c.needs_llm]
    server = build_server(None, methods=offered)  # type: ignore[arg-type]  # no index: schemas
    parts = []
    for tool in asyncio.run(server.list_tools()):
        doc = " ".join((tool.description or "").split("\n\n")[0].split())
        lines = [f"#### `{tool.name}`", "", doc, ""]
        properties = tool.inputSchema.get("properties", {})
        required = set(tool.inputSchema.get("required", []))
        if not properties:
            lines.append("No arguments.")
        else:
            lines += ["| argument | type | default | meaning |", "|---|---|---|---|"]
            for name, schema in properties.items():
                default = schema.get("default")
                default = (
                    "required" if name in required else "–" if default is None else f"`{default}`"
                )
                meaning = " ".join(str(schema.get("description", "")).split())
                lines.append(f"| `{name}` | {_schema_type(schema)} | {default} | {meaning} |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def _schema_type(schema: dict[str, Any]) -> str:
    """Name a JSON schema's type as a user writes its value."""
    if "enum" in schema:
        return " \\| ".join(f"`{v}`" for v in schema["enum"])
    if "anyOf" in schema:
        kinds = [_schema_type(s) for s in schema["anyOf"] if s.get("type") != "null"]
        nullable = any(s.get("type") == "null" for s in schema["anyOf"])
        return " or ".join(kinds) + (" (optional)" if nullable else "")
    kind = schema.get("type", "any")
    names = {"string": "text", "integer": "integer", "number": "number", "boolean": "true / false"}
    text = names.get(kind, "object" if kind == "object" else str(kind))
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and high is not None:
        text += f", {low} to {high}"
    if schema.get("minLength"):
        text += ", not empty"
    return text


RENDER = {"cli": cli_reference, "configuration": configuration_reference, "mcp": mcp_reference}


def _markers(name: str) -> tuple[str, str]:
    return f"<!-- generated:{name}:start -->", f"<!-- generated:{name}:end -->"


def replaced(text: str, name: str, body: str) -> str:
    """Return ``text`` with what lies between ``name``'s markers replaced by ``body``."""
    return between_markers(text, *_markers(name), body)


def main(argv: list[str] | None = None) -> int:
    """Print, write or check the generated parts of the reference pages."""
    parser = argparse.ArgumentParser(
        prog="python -m hopgraph.reference",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="write them into docs/")
    mode.add_argument("--check", action="store_true", help="exit 1 when a page differs")
    args = parser.parse_args(argv)
    stale = []
    for name, page in PAGES.items():
        body = RENDER[name]()
        if not (args.write or args.check):
            print(body)
            continue
        path = ROOT / page
        text = path.read_text(encoding="utf-8")
        new = replaced(text, name, body)
        if args.write and new != text:
            path.write_text(new, encoding="utf-8")
            print(f"wrote {page}")
        elif args.check and new != text:
            stale.append(page)
    if stale:
        print(f"out of date: {', '.join(stale)}; run python -m hopgraph.reference --write",
              file=sys.stderr)  # fmt: skip
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
