"""Typed settings shared by the index, the retrievers, the LLM client and the CLI.

One :class:`Settings` (pydantic-settings), from four layers, each over the one before:
defaults < ``hopgraph.toml`` (in the index folder, or the file ``--config`` names) <
``HOPGRAPH_*`` environment variables < command-line flags. ``hopgraph config show`` prints the
effective values and where each came from. Settings are read when asked for, not cached, so a
changed variable counts from the next call.
"""

from __future__ import annotations

import importlib
import os
import re
import threading
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

# The names the parser shows and the run's --config and flags live in config.py, which the
# parser imports without paying for pydantic; re-exported here for everything that reads settings.
from .config import (
    CONFIG_FILE,
    DEFAULT_MODEL,
    DEVICES,
    ENV_PREFIX,
    LLM_CHOICES,
    Device,
    LLMChoice,
    _active,
    configure,
    settings_file,
)
from .errors import InputError

__all__ = [  # with those of config.py, re-exported (IndexSettings: __getattr__ below)
    "CONFIG_FILE",
    "DEFAULT_MODEL",
    "DEVICES",
    "LLM_CHOICES",
    "Settings",
    "cache_dir",
    "configure",
    "default_index_dir",
    "describe_settings",
    "encoders_dir",
    "named_setting",
    "settings",
    "settings_file",
]


class Settings(BaseSettings):
    """Every setting, with the variable ``HOPGRAPH_<NAME>`` and the key ``<name>`` of each."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_ignore_empty=True, extra="forbid", frozen=True
    )

    index: Path = Field(Path("hopgraph-index"), description="index directory")
    cache: Path | None = Field(
        None, description="derived data (eval indexes, traces); None: $XDG_CACHE_HOME/hopgraph"
    )
    encoders: Path | None = Field(
        None, description="where query encoders exported to ONNX are kept; None: CACHE/encoders"
    )
    model: str = Field(DEFAULT_MODEL, description="embedding model of new indexes")
    chunk_tokens: int = Field(200, ge=16, le=4096, description="chunk size of new indexes")
    batch_size: int = Field(32, ge=1, le=4096, description="passages per embedding batch")
    chroma_url: str | None = Field(None, description="Chroma server of new indexes")
    embeddings_url: str | None = Field(
        None, description="OpenAI-compatible embeddings endpoint of new indexes (…/v1)"
    )
    vector_dtype: Literal["float32", "float16"] = Field(
        "float32", description="how new indexes store vectors (float16: half the memory)"
    )
    embeddings_api_key: SecretStr | None = Field(
        None, description="its API key (else the LLM's, else none)"
    )
    embeddings_timeout: float = Field(60.0, gt=0, description="seconds per embeddings request")
    embeddings_max_retries: int = Field(3, ge=0, description="embeddings retries with backoff")
    max_document_mb: float = Field(
        2.0, gt=0, description="documents with more text are skipped (about 2,000 chunks a MB)"
    )
    device: Device = Field("auto", description="encoder device")
    embed_processes: int = Field(1, ge=1, description="CPU encoding processes")
    llm: LLMChoice = Field("auto", description="who answers prompts")
    llm_model: str | None = Field(None, description="model name (else $OPENAI_MODEL)")
    llm_base_url: str | None = Field(None, description="OpenAI-compatible endpoint")
    llm_api_key: SecretStr | None = Field(None, description="API key (else $OPENAI_API_KEY)")
    llm_temperature: float | None = Field(None, ge=0, le=2, description="sampling temperature")
    llm_timeout: float | None = Field(None, gt=0, description="seconds per request")
    llm_max_retries: int | None = Field(None, ge=0, description="retries with backoff")
    llm_max_concurrency: int | None = Field(None, ge=1, description="requests in flight")
    llm_gguf: Path | None = Field(None, description="GGUF file for --llm local")
    llm_threads: int | None = Field(
        None,
        ge=1,
        description="CPU threads for --llm local (default: half the cores, as llama.cpp; "
        "set 1 where other work shares the machine, since its threads wait on each other)",
    )
    token: SecretStr | None = Field(
        None, description="bearer token the HTTP servers (MCP, LangGraph) ask clients for"
    )
    allow_hosts: list[str] = Field(
        [],
        description="host names the HTTP servers answer to besides loopback and their own "
        "address (a JSON list; any other Host gets 421, against DNS rebinding)",
    )
    serve_indexes: list[Path] = Field(
        [], description="indexes the LangGraph server may open (default: the index setting)"
    )
    cluster: str | None = Field(
        None,
        description="Ray cluster (HOST:PORT or local) the LangGraph server serves shards on",
    )
    shards: int | None = Field(
        None, ge=1, description="with cluster: the LangGraph server serves from this many shards"
    )
    replicas: int = Field(1, ge=1, description="with shards: replicas of each shard")
    wait: float = Field(
        600.0,
        ge=0,
        description="seconds a reader waits for another process's write to the index (a "
        "method's first use embeds its triples; an eval's cached index is being built) before "
        "it gives up; 0: at once",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Read flags (init) first, then the environment, then the settings file."""
        file = _active["file"]
        toml = (TomlConfigSettingsSource(settings_cls, toml_file=file),) if file else ()
        return (init_settings, env_settings, *toml)


_reading = threading.RLock()  # the file being read is passed to the source through _active


def settings(**flags: Any) -> Settings:
    """Return the effective settings; ``flags`` (None: not given) win over everything."""
    with _reading:
        return _read(_given(flags))


def _unparsed(err: SettingsError) -> InputError:
    """Name the variable pydantic-settings could not parse, its value and the form it takes."""
    found = re.search(r'field "(\w+)"', str(err))
    if found is None:
        return InputError(f"invalid setting: {err}", "fix the value where it is set")
    name = f"{ENV_PREFIX}{found[1].upper()}"
    value = os.environ.get(name)
    shown = f" (it is {value!r})" if value is not None else ""
    example = _LIST_EXAMPLES.get(found[1], '["..."]')
    return InputError(
        f"invalid setting: {name} is not a JSON list{shown}",
        f"write it as a JSON list, e.g. {name}='{example}' (or unset it)",
    )


_LIST_EXAMPLES = {"allow_hosts": '["docs.example.org"]', "serve_indexes": '["/srv/idx/docs"]'}


def _given(flags: dict[str, Any]) -> dict[str, Any]:
    """Return this process's flags under the call's own (None: not given)."""
    return {**_active["flags"], **{k: v for k, v in flags.items() if v is not None}}


def _read(given: dict[str, Any]) -> Settings:
    _active["file"] = settings_file(given)
    try:
        return Settings(**given)
    except ValidationError as err:
        where = _sources(given)
        problems = "; ".join(
            f"{err_['loc'][0]} ({where.get(str(err_['loc'][0]), 'unknown')}): {err_['msg']}"
            for err_ in err.errors()
        )
        raise InputError(f"invalid setting: {problems}", "fix the value where it is set") from None
    except SettingsError as err:  # a variable pydantic-settings cannot parse (a list's JSON)
        raise _unparsed(err) from None
    except Exception as err:  # an unreadable settings file: say which
        if _active["file"] is None:
            raise
        raise InputError(f"cannot read {_active['file']}: {err}", "fix its TOML") from None
    finally:
        _active["file"] = None


def _sources(given: dict[str, Any]) -> dict[str, str]:
    """Return where each setting comes from: a flag, a variable, the settings file or default."""
    file = settings_file(given)
    try:
        in_file = set(tomllib.loads(file.read_text(encoding="utf-8"))) if file else set()
    except (OSError, tomllib.TOMLDecodeError):
        in_file = set()  # reading the settings says what is wrong with the file
    out = {}
    for name in Settings.model_fields:
        variable = f"{ENV_PREFIX}{name.upper()}"
        if name in given:
            out[name] = "flag"
        elif os.environ.get(variable):
            out[name] = f"env {variable}"
        else:
            out[name] = str(file) if name in in_file else "default"
    return out


def named_setting(name: str) -> Any:
    """Return a setting's value when the user set it (file, variable or flag), else None."""
    given = _given({})
    return None if _sources(given)[name] == "default" else getattr(settings(), name)


def describe_settings(**flags: Any) -> list[tuple[str, str, str]]:
    """Return (name, value, where it came from) of every setting; secrets are masked."""
    current, where = settings(**flags), _sources(_given(flags))
    rows = []
    for name in Settings.model_fields:
        value = getattr(current, name)
        shown = "****" if isinstance(value, SecretStr) else ("" if value is None else str(value))
        rows.append((name, shown, where[name]))
    return rows


def default_index_dir() -> Path:
    """Return the index directory to use when none is given (the ``index`` setting)."""
    return settings().index


def encoders_dir() -> Path:
    """Return where the ONNX exports of embedding models are kept (embedding/onnx_encoder.py)."""
    return settings().encoders or cache_dir() / "encoders"


def cache_dir() -> Path:
    """Return where hopgraph keeps derived data such as evaluation indexes.

    The ``cache`` setting if set, else ``$XDG_CACHE_HOME/hopgraph``, else ``~/.cache/hopgraph``.
    """
    chosen = settings().cache
    if chosen is not None:
        return chosen
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "hopgraph"


def __getattr__(name: str) -> Any:
    # IndexSettings lives in index_settings.py, which imports this module to read the settings
    # (IndexSettings.from_settings): its old name here is looked up, not imported, so the two
    # modules do not import each other.
    if name == "IndexSettings":
        return importlib.import_module("hopgraph.core.index_settings").IndexSettings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
