"""Test doubles: a chat model that follows a script and counts its calls."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field, PrivateAttr


def extraction_reply(prompt: str) -> str:
    """Answer the extraction prompts like a well-behaved LLM would, from the passage itself."""
    if "RDF" in prompt:
        title, text = re.findall(r'Paragraph:\n"\n(.*?)\n(.*?)\n"', prompt, re.S)[-1]
        names = [n for n in re.findall(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)*", text) if n != title]
        triples = ", ".join(f'("{title}", "mentions", "{n}")' for n in names[:3])
        return (
            f'{{"named_entities": {[title, *names[:3]]!r}}}\n'.replace("'", '"')
            + f'{{"triples": [{triples}]}}'
        )
    if "five most representative keywords" in prompt:
        text = prompt.rsplit("Text: ", 1)[-1]
        words = re.findall(r"[A-Za-z]{5,}", text)[:5]
        return str(words).replace("'", '"')
    if "wikipedia links" in prompt:
        text = prompt.rsplit("\n\n", 1)[-1]
        names = re.findall(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)*", text)
        pairs = [[n, "https://en.wikipedia.org/wiki/" + n.replace(" ", "_")] for n in names]
        return str(pairs)
    return "[]"


class ScriptedChatModel(BaseChatModel):
    """Replies with ``respond(prompt)``; ``fail_after`` calls raise to simulate a crash."""

    respond: Callable[[str], str] = Field(default=extraction_reply)
    fail_after: int | None = None
    _calls: list[str] = PrivateAttr(default_factory=list)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)

    @property
    def calls(self) -> list[str]:
        return self._calls

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        prompt = str(messages[-1].content)
        with self._lock:
            self._calls.append(prompt)
            if self.fail_after is not None and len(self._calls) > self.fail_after:
                raise RuntimeError("the model server went away")
        text = self.respond(prompt)
        usage = {
            "input_tokens": len(prompt) // 4,
            "output_tokens": len(text) // 4,
            "total_tokens": (len(prompt) + len(text)) // 4,
        }
        message = AIMessage(content=text, usage_metadata=usage)
        return ChatResult(generations=[ChatGeneration(message=message)])


class ToolCallingChatModel(ScriptedChatModel):
    """A scripted model that can be bound to tools: ``respond`` may return an AIMessage.

    ``respond`` gets the whole message list as text; to call a tool it returns
    ``AIMessage(content="", tool_calls=[...])``.
    """

    turns: Callable[[list[BaseMessage]], AIMessage | str] | None = None

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingChatModel:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        if self.turns is None:
            return super()._generate(messages, stop, run_manager, **kwargs)
        with self._lock:
            self._calls.append(str(messages[-1].content))
        reply = self.turns(messages)
        message = reply if isinstance(reply, AIMessage) else AIMessage(content=reply)
        return ChatResult(generations=[ChatGeneration(message=message)])
