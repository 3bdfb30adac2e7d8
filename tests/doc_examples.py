"""The shell and Python examples of README.md and docs/, read as a user reads them.

A fenced ``bash`` block is a list of commands; a ``console`` block holds commands after ``$ ``
and, under each, lines its output must show (``…`` stands for anything, within a line or as a
line of its own); a ``python`` block is one program, run by the environment's Python. A block
that cannot run as written says why on the line before it: ``<!-- example: REASON -->``. Blocks
that need an LLM endpoint run against a scripted one (their ``export`` lines, which name the
user's server, are left out).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]
NEEDS_LLM = "needs an LLM endpoint"
BLOCK = re.compile(
    r"(?:<!-- example: (?P<reason>[^\n]+?) -->\n)?^```(?P<lang>bash|console|sh|shell|python)\n"
    r"(?P<body>.*?)^```",
    flags=re.DOTALL | re.MULTILINE,
)


@dataclass
class Command:
    """One command line and the output lines it must show (console blocks)."""

    text: str
    expected: list[str] = field(default_factory=list)


@dataclass
class Example:
    """A fenced shell block of a page."""

    page: str
    line: int
    reason: str | None
    commands: list[Command]

    @property
    def runs(self) -> bool:
        """Whether the test runs it (as written, or against the scripted LLM)."""
        return self.reason is None or self.reason.startswith(NEEDS_LLM)

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def _bash(body: str) -> list[Command]:
    """Commands of a bash block: continuation lines joined, comments and blanks left out."""
    joined = re.sub(r"\\\n\s*", "", body)
    lines = [line for line in joined.splitlines() if line.strip()]
    return [Command(line) for line in lines if not line.startswith("#")]


def _console(body: str) -> list[Command]:
    commands: list[Command] = []
    for line in body.splitlines():
        if line.startswith("$ "):
            commands.append(Command(line[2:]))
        elif commands and line.strip():
            commands[-1].expected.append(line.rstrip())
    return commands


def examples(page: str) -> list[Example]:
    """Return the page's shell blocks, in order."""
    text = (ROOT / page).read_text(encoding="utf-8")
    found = []
    for match in BLOCK.finditer(text):
        body, lang = match.group("body"), match.group("lang")
        if lang == "python":  # one program: a heredoc, so the shell runs it like the rest
            commands = [Command(f"python - <<'PYTHON'\n{body}PYTHON")]
        else:
            commands = _console(body) if lang == "console" else _bash(body)
        line = text.count("\n", 0, match.start("lang")) + 1
        found.append(Example(page, line, match.group("reason"), commands))
    return found


def shown(expected: list[str], output: str) -> str | None:
    """Return the first expected line the output does not show (in order), else None."""
    lines = re.split(r"[\r\n]+", output)
    at = 0
    for want in expected:
        parts = [p for p in want.strip().split("…") if p.strip()]
        if not parts:
            continue  # a line of "…": anything
        while at < len(lines) and not _holds(lines[at], parts):
            at += 1
        if at == len(lines):
            return want
        at += 1
    return None


def _holds(line: str, parts: list[str]) -> bool:
    position = 0
    for part in parts:
        found = line.find(part.strip(), position)
        if found < 0:
            return False
        position = found + len(part.strip())
    return True
