"""What the parser needs of the settings, and what the run was told: no pydantic here.

``hopgraph --help`` and argument parsing import this module only; pydantic and
pydantic-settings (about 0.3 s of imports) are paid by the commands that read settings
(:mod:`hopgraph.core.settings`, which re-exports everything here).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, get_args

from .errors import InputError

DEFAULT_MODEL = "all-MiniLM-L6-v2"
CONFIG_FILE = "hopgraph.toml"
"""The settings file hopgraph reads from an index folder."""
ENV_PREFIX = "HOPGRAPH_"

Device = Literal["auto", "cpu", "cuda", "mps"]
DEVICES: tuple[str, ...] = get_args(Device)
"""Where the embedding model runs (``--device``, ``HOPGRAPH_DEVICE``)."""
LLMChoice = Literal["auto", "endpoint", "local", "none"]
LLM_CHOICES: tuple[str, ...] = get_args(LLMChoice)
"""What ``--llm`` (or ``HOPGRAPH_LLM``) may say: who answers a run's prompts."""


def package_version() -> str:
    """Return hopgraph's installed version (importlib.metadata: read on request, 0.03 s)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hopgraph")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0.0.0+source"


_active: dict[str, Any] = {"file": None, "config": None, "flags": {}}
"""What :func:`configure` set for this process: the --config file and the global flags."""


def configure(config: Path | None = None, **flags: Any) -> None:
    """Set this process's --config file and command-line flags (None: not given)."""
    if config is not None and not Path(config).is_file():
        raise InputError(f"no settings file at {config}", "give the path of a hopgraph.toml")
    _active["config"] = Path(config) if config is not None else None
    _active["flags"] = {k: v for k, v in flags.items() if v is not None}


def settings_file(flags: dict[str, Any] | None = None) -> Path | None:
    """Return the settings file in effect: --config, else hopgraph.toml in the index folder."""
    if _active["config"] is not None:
        return _active["config"]
    flags = {**_active["flags"], **(flags or {})}
    index = flags.get("index") or os.environ.get(f"{ENV_PREFIX}INDEX") or "hopgraph-index"
    candidate = Path(index) / CONFIG_FILE
    return candidate if candidate.is_file() else None


def positive_number(value: str | int) -> int:
    """Parse a positive whole number as every surface does: the CLI's ``-k``, the servers' ``k``.

    ``int()``'s rules (so "²", a superscript, is not a number, and "5" or " 5 " is); a JSON
    number passes as itself. ValueError says what was wrong.
    """
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"expected a whole number, got {value!r}")
    try:
        number = int(value)
    except ValueError:
        raise ValueError(f"expected a whole number, got {value!r}") from None
    if number <= 0:
        raise ValueError(f"must be a positive whole number, got {number}")
    return number
