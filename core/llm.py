"""One place that builds the chat model: any OpenAI-compatible endpoint through ChatOpenAI.

Works with OpenAI and with local servers that speak its API (vLLM, Ollama, llama.cpp server,
LM Studio). Configured by ``HOPGRAPH_LLM_*`` variables (falling back to ``OPENAI_*``); without a
model and an endpoint or key, every LLM feature stops with an error that names what to set.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypedDict  # pydantic reads it on Python < 3.12

from .errors import HopgraphError, LLMReplyError, LLMServerError
from .settings import LLM_CHOICES, settings

if TYPE_CHECKING:  # langchain-core is 1 s of imports: paid when a model is called, not by
    # the LLM-free retrievers that import this module for its types and helpers
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import BaseMessage

T = TypeVar("T")

SETUP_HINT = (
    "set HOPGRAPH_LLM_MODEL and HOPGRAPH_LLM_BASE_URL (any OpenAI-compatible server, e.g. "
    "http://127.0.0.1:8000/v1 for vLLM or http://127.0.0.1:11434/v1 for Ollama) and, if the "
    "server needs one, HOPGRAPH_LLM_API_KEY; for OpenAI itself OPENAI_API_KEY is enough"
)


class LLMSettings(BaseModel):
    """How to reach the LLM."""

    model_config = ConfigDict(frozen=True)

    model: str = Field(description="model name the server knows")
    base_url: str | None = Field(None, description="OpenAI-compatible endpoint; None = OpenAI")
    api_key: str | None = Field(None, repr=False, description="API key (local servers: any)")
    temperature: float = Field(0.0, ge=0, le=2)
    timeout: float = Field(60.0, gt=0, description="seconds per request")
    max_retries: int = Field(3, ge=0, description="retries of 429s, 5xx and timeouts, backoff")
    max_concurrency: int = Field(4, ge=1, description="requests in flight at once")

    @classmethod
    def from_settings(cls) -> LLMSettings:
        """Read the ``llm_*`` settings (then ``OPENAI_*``); raise if no LLM is configured."""
        current = settings()
        secret = current.llm_api_key.get_secret_value() if current.llm_api_key else None
        model = current.llm_model or os.environ.get("OPENAI_MODEL") or None
        base_url = current.llm_base_url or os.environ.get("OPENAI_BASE_URL") or None
        api_key = secret or os.environ.get("OPENAI_API_KEY") or None
        if not model or not (base_url or api_key):
            raise HopgraphError("no LLM is configured", SETUP_HINT)
        numbers = {
            field: getattr(current, f"llm_{field}")
            for field in ("temperature", "timeout", "max_retries", "max_concurrency")
        }
        return cls(
            model=model,
            base_url=base_url,
            api_key=api_key,
            **{k: v for k, v in numbers.items() if v is not None},
        )


def make_chat_model(settings: LLMSettings) -> BaseChatModel:
    """Build a ChatOpenAI client for the settings (retries with backoff are the client's)."""
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=settings.model,
        base_url=settings.base_url,
        # Local servers ignore the key, but the client insists on one.
        api_key=settings.api_key or "not-needed",
        temperature=settings.temperature,
        timeout=settings.timeout,
        max_retries=settings.max_retries,
    )


class Usage(TypedDict):
    """LLM accounting of a run or a step: calls, tokens, seconds, and how replies parsed.

    ``structured`` counts the questions whose reply must follow a format; ``parse_failures``
    the first replies of those that the parser refused; ``repaired`` the failures one repair
    request fixed; ``fallbacks`` the rest, where the caller's labelled fallback was used.
    """

    calls: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    structured: int
    parse_failures: int
    repaired: int
    fallbacks: int


_COUNTS = (
    "calls", "prompt_tokens", "completion_tokens", "structured", "parse_failures", "repaired",
    "fallbacks",
)  # fmt: skip


def no_usage() -> Usage:
    """Return the usage of nothing: all zeros."""
    return Usage(**dict.fromkeys(_COUNTS, 0), seconds=0.0)  # type: ignore[typeddict-item]


def add_usage(left: Usage | None, right: Usage | None) -> Usage:
    """Add two usages (the reducer of every agent's ``usage`` state key).

    A usage saved before a counter existed (an old checkpoint) counts 0 for it.
    """
    a, b = left or {}, right or {}
    total = {key: int(a.get(key, 0)) + int(b.get(key, 0)) for key in _COUNTS}
    seconds = float(a.get("seconds", 0.0)) + float(b.get("seconds", 0.0))
    return Usage(**total, seconds=seconds)  # type: ignore[typeddict-item]


def complete(chat: BaseChatModel, prompt: str) -> tuple[str, Usage]:
    """Send one prompt; return the reply text and what the call cost.

    Tokens are the server's counts (``usage_metadata``); a server that reports none counts 0.
    """
    from langchain_core.messages import HumanMessage

    started = time.perf_counter()
    message = invoke(chat, [HumanMessage(prompt)])
    tokens = getattr(message, "usage_metadata", None) or {}
    usage = no_usage()
    usage.update(
        calls=1,
        prompt_tokens=int(tokens.get("input_tokens", 0)),
        completion_tokens=int(tokens.get("output_tokens", 0)),
        seconds=time.perf_counter() - started,
    )
    return str(message.content), usage


def invoke(chat: BaseChatModel, messages: list[BaseMessage]) -> BaseMessage:
    """Call the model; a server that cannot be reached or refuses says where and how to fix it."""
    import openai

    try:
        return chat.invoke(messages)
    except openai.OpenAIError as err:
        raise _server_error(chat, err) from err


def _server_error(chat: BaseChatModel, err: Exception) -> LLMServerError:
    """Turn an OpenAI client error into one that names the server, the model and the fix."""
    import openai

    url = getattr(chat, "openai_api_base", None) or "the OpenAI API"
    model = getattr(chat, "model_name", None) or "?"
    if isinstance(err, openai.APITimeoutError):
        return LLMServerError(
            f"the LLM server at {url} did not answer in time (model {model!r})",
            "raise HOPGRAPH_LLM_TIMEOUT, or use a faster model",
        )
    if isinstance(err, openai.APIConnectionError):
        return LLMServerError(
            f"cannot reach the LLM server at {url} (model {model!r}): {err}",
            "start the server, or set HOPGRAPH_LLM_BASE_URL to where it listens",
        )
    if isinstance(err, openai.AuthenticationError):
        return LLMServerError(
            f"the LLM server at {url} refused the API key", "set HOPGRAPH_LLM_API_KEY"
        )
    if isinstance(err, openai.NotFoundError):
        return LLMServerError(
            f"the LLM server at {url} has no model {model!r}: {err}",
            "set HOPGRAPH_LLM_MODEL to a model the server serves",
        )
    status = getattr(err, "status_code", None)
    return LLMServerError(
        f"the LLM server at {url} failed (model {model!r}"
        + (f", HTTP {status}" if status else "")
        + f"): {err}",
        "check the server's log; retries follow HOPGRAPH_LLM_MAX_RETRIES",
    )


def parse_with_repair(
    send: Callable[[str], tuple[str, Usage]],
    prompt: str,
    parse: Callable[[str], T],
    fallback: Callable[[str], T] | None = None,
) -> tuple[T, Usage]:
    """Send ``prompt`` and parse the reply; on a parse error ask once to repair it.

    ``send`` returns a reply and its usage (a live call, or a cached one); ``parse`` raises
    ``ValueError`` (the extractors' ``ParseError`` is one) on a reply it cannot read. When the
    repaired reply is unreadable too, ``fallback`` (given that reply) supplies the value and
    the usage counts a fallback, which the caller labels; without one, :class:`LLMReplyError`
    is raised quoting the reply. Returns the value and the usage of every call made.
    """
    from hopgraph.prompts.repair import REPAIR

    reply, usage = send(prompt)
    usage = add_usage(usage, _counted(structured=1))
    try:
        return parse(reply), usage
    except ValueError as err:
        retry = REPAIR.format(error=err, reply=reply[:2000])
        repaired, more = send(f"{prompt}\n\n{retry}")
        usage = add_usage(add_usage(usage, more), _counted(parse_failures=1))
    try:
        value = parse(repaired)
    except ValueError as err:
        if fallback is None:
            raise LLMReplyError(
                f"the LLM's reply could not be read ({err}): {repaired[:200]!r}",
                "check that HOPGRAPH_LLM_MODEL follows instructions, or use a larger model",
            ) from err
        return fallback(repaired), add_usage(usage, _counted(fallbacks=1))
    return value, add_usage(usage, _counted(repaired=1))


def _counted(**counts: int) -> Usage:
    usage = no_usage()
    usage.update(counts)  # type: ignore[typeddict-item]
    return usage


def ask_structured(
    chat: BaseChatModel,
    prompt: str,
    parse: Callable[[str], T],
    fallback: Callable[[str], T] | None = None,
) -> tuple[T, Usage]:
    """Ask ``chat`` and parse the reply, with one repair request (:func:`parse_with_repair`)."""
    return parse_with_repair(lambda text: complete(chat, text), prompt, parse, fallback)


def labelled(line: str, usage: Usage, used: str) -> str:
    """Return a step's line, saying which fallback was ``used`` if its reply was unreadable."""
    if not usage.get("fallbacks"):
        return line
    return f"{line} [FALLBACK: the model's reply could not be read even after a repair; {used}]"


OFFLINE_DEFAULT = "none"
"""What ``auto`` means with no endpoint configured: answering with evidence alone. The local
model answers only when asked (``--llm local``): on 50 MuSiQue dev questions none of its 200
answers over four methods was right (EM 0, F1 1.3–2.8, as low as naming the first passage's
title; README, "A real local model")."""


def endpoint_configured() -> bool:
    """Return whether ``HOPGRAPH_LLM_*`` (or ``OPENAI_*``) names an endpoint to use."""
    try:
        LLMSettings.from_settings()
    except HopgraphError:
        return False
    return True


def choose_chat(choice: str | None = None) -> BaseChatModel | None:
    """Return the chat model ``choice`` names (default ``HOPGRAPH_LLM``, else ``auto``).

    ``endpoint``: the OpenAI-compatible server of ``HOPGRAPH_LLM_*`` (an error says what to set
    if there is none); ``local``: :class:`~hopgraph.core.local_llm.LocalChatModel`; ``none``: no
    model (callers answer with evidence alone); ``auto``: the endpoint if one is configured, else
    :data:`OFFLINE_DEFAULT`.
    """
    if choice is None:
        choice = settings().llm
    if choice not in LLM_CHOICES:
        raise HopgraphError(
            f"unknown LLM choice {choice!r}", f"use one of {', '.join(LLM_CHOICES)} (HOPGRAPH_LLM)"
        )
    if choice == "auto":
        choice = "endpoint" if endpoint_configured() else OFFLINE_DEFAULT
    if choice == "endpoint":
        return make_chat_model(LLMSettings.from_settings())
    if choice == "local":
        from .local_llm import LocalChatModel

        return LocalChatModel.from_settings()
    return None


def required_chat() -> BaseChatModel:
    """Return the model of ``HOPGRAPH_LLM`` (:func:`choose_chat`); raise if that is none."""
    chat = choose_chat()
    if chat is None:
        raise HopgraphError(
            "no LLM is configured",
            f"{SETUP_HINT}; or HOPGRAPH_LLM=local for the small offline model",
        )
    return chat


def describe(chat: BaseChatModel | None) -> str:
    """Say who answers, for output a user reads."""
    if chat is None:
        return "no LLM: evidence only"
    label = getattr(chat, "label", None)
    if isinstance(label, str):
        return label
    return f"the model {getattr(chat, 'model_name', None) or type(chat).__name__}"
