"""One place that builds the chat model: any OpenAI-compatible endpoint through ChatOpenAI.

Works with OpenAI and with local servers that speak its API (vLLM, Ollama, llama.cpp server,
LM Studio). Configured by ``HOPGRAPH_LLM_*`` variables (falling back to ``OPENAI_*``); without a
model and an endpoint or key, every LLM feature stops with an error that names what to set.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypedDict, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from pydantic import BaseModel, ConfigDict, Field

from .errors import HopgraphError, LLMReplyError

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
    def from_env(cls) -> LLMSettings:
        """Read ``HOPGRAPH_LLM_*`` (then ``OPENAI_*``); raise if no LLM is configured."""

        def env(name: str, fallback: str | None = None) -> str | None:
            value = os.environ.get(f"HOPGRAPH_LLM_{name}")
            return value or (os.environ.get(fallback) if fallback else None) or None

        model = env("MODEL", "OPENAI_MODEL")
        base_url = env("BASE_URL", "OPENAI_BASE_URL")
        api_key = env("API_KEY", "OPENAI_API_KEY")
        if not model or not (base_url or api_key):
            raise HopgraphError("no LLM is configured", SETUP_HINT)
        numbers = {
            field: env(name)
            for field, name in (
                ("temperature", "TEMPERATURE"),
                ("timeout", "TIMEOUT"),
                ("max_retries", "MAX_RETRIES"),
                ("max_concurrency", "MAX_CONCURRENCY"),
            )
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
    """LLM accounting of a run or a step: calls, tokens and seconds spent waiting."""

    calls: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float


def no_usage() -> Usage:
    """Return the usage of nothing: all zeros."""
    return Usage(calls=0, prompt_tokens=0, completion_tokens=0, seconds=0.0)


def add_usage(left: Usage | None, right: Usage | None) -> Usage:
    """Add two usages (the reducer of every agent's ``usage`` state key)."""
    a, b = left or no_usage(), right or no_usage()
    return Usage(
        calls=a["calls"] + b["calls"],
        prompt_tokens=a["prompt_tokens"] + b["prompt_tokens"],
        completion_tokens=a["completion_tokens"] + b["completion_tokens"],
        seconds=a["seconds"] + b["seconds"],
    )


def complete(chat: BaseChatModel, prompt: str) -> tuple[str, Usage]:
    """Send one prompt; return the reply text and what the call cost.

    Tokens are the server's counts (``usage_metadata``); a server that reports none counts 0.
    """
    started = time.perf_counter()
    message = chat.invoke([HumanMessage(prompt)])
    tokens = getattr(message, "usage_metadata", None) or {}
    return str(message.content), Usage(
        calls=1,
        prompt_tokens=int(tokens.get("input_tokens", 0)),
        completion_tokens=int(tokens.get("output_tokens", 0)),
        seconds=time.perf_counter() - started,
    )


def parse_with_repair(
    send: Callable[[str], tuple[str, Usage]], prompt: str, parse: Callable[[str], T]
) -> tuple[T, Usage]:
    """Send ``prompt`` and parse the reply; on a parse error ask once to repair it.

    ``send`` returns a reply and its usage (a live call, or a cached one); ``parse`` raises
    ``ValueError`` (the extractors' ``ParseError`` is one) on a reply it cannot read. A second
    unreadable reply raises :class:`LLMReplyError` quoting it. Returns the parsed value and the
    usage of both calls.
    """
    from prompts.extraction import REPAIR

    reply, usage = send(prompt)
    try:
        return parse(reply), usage
    except ValueError:
        repaired, more = send(f"{prompt}\n\n{REPAIR.format(reply=reply[:2000])}")
        usage = add_usage(usage, more)
        try:
            return parse(repaired), usage
        except ValueError as err:
            raise LLMReplyError(
                f"the LLM's reply could not be read ({err}): {repaired[:200]!r}",
                "check that HOPGRAPH_LLM_MODEL follows instructions, or use a larger model",
            ) from err


def ask_structured(chat: BaseChatModel, prompt: str, parse: Callable[[str], T]) -> tuple[T, Usage]:
    """Ask ``chat`` and parse the reply, with one repair request (:func:`parse_with_repair`)."""
    return parse_with_repair(lambda text: complete(chat, text), prompt, parse)
