"""LLM extraction with the papers' prompts.

GEAR's joint entities + triples, IIER's keywords, and optionally GNN-Ret's entity links.

Every reply is cached on disk (model + prompt) the moment it arrives, so re-indexing pays nothing
twice and a run that crashed resumes where it stopped. Requests run with bounded concurrency;
429s, server errors and timeouts are retried with backoff by the OpenAI client; a reply that
cannot be parsed gets one repair request, then the chunk part is left empty and counted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from tqdm.auto import tqdm

from hopgraph.core.errors import LLMReplyError
from hopgraph.core.llm import Usage, invoke, no_usage, parse_with_repair
from hopgraph.graph_store.documents.schema import Chunk
from hopgraph.prompts.extraction import GEAR_EXTRACTION, GNN_RET_LINKS, IIER_CHUNK_KEYWORDS

from .base import Extraction, Triple
from .cache import CachedReply, ReplyCache
from .offline import token_key
from .parsing import parse_entities_and_triples, parse_entity_links, parse_string_list

T = TypeVar("T")
PROMPT_SETS = ("gear", "iier", "gnn_ret")


class LLMExtractor:
    """Reads chunks with an LLM; same outputs as the offline extractor."""

    name = "llm"

    def __init__(
        self,
        chat: BaseChatModel,
        model_name: str,
        cache: ReplyCache,
        max_concurrency: int = 4,
        prompts: Sequence[str] = ("gear", "iier"),
    ) -> None:
        unknown = set(prompts) - set(PROMPT_SETS)
        if unknown:
            raise ValueError(f"unknown prompt sets {sorted(unknown)}; choose from {PROMPT_SETS}")
        self.chat = chat
        self.model_name = model_name
        self.cache = cache
        self.max_concurrency = max_concurrency
        self.prompts = tuple(prompts)
        self._lock = threading.Lock()
        self.stats = {
            "requests": 0,
            "cached": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "parse_failures": 0,
        }

    @classmethod
    def from_environment(
        cls, cache_path: Path, prompts: Sequence[str] = ("gear", "iier")
    ) -> LLMExtractor:
        """Build from ``HOPGRAPH_LLM_*`` settings (a clear error when none are set)."""
        from hopgraph.core.llm import LLMSettings, make_chat_model

        settings = LLMSettings.from_settings()
        return cls(
            make_chat_model(settings),
            settings.model,
            ReplyCache(cache_path),
            settings.max_concurrency,
            prompts,
        )

    def extract(self, chunks: Sequence[Chunk], show_progress: bool = False) -> list[Extraction]:
        """Extract every chunk, ``max_concurrency`` requests at a time; the first error stops."""
        results: list[Extraction | None] = [None] * len(chunks)
        bar = tqdm(
            total=len(chunks), desc="extracting (LLM)", unit="chunk", disable=not show_progress
        )
        with ThreadPoolExecutor(max_workers=self.max_concurrency) as pool:
            futures = {pool.submit(self.extract_one, chunk): i for i, chunk in enumerate(chunks)}
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_EXCEPTION)
                for future in done:
                    if future.exception() is not None:
                        pool.shutdown(wait=True, cancel_futures=True)
                        bar.close()
                        raise future.exception()  # type: ignore[misc]
                    results[futures[future]] = future.result()
                bar.update(len(done))
                bar.set_postfix(self._postfix(), refresh=False)
        bar.close()
        return [r for r in results if r is not None]

    def extract_one(self, chunk: Chunk) -> Extraction:
        """Run the configured prompts on one chunk and merge their outputs."""
        page = token_key(chunk.title) if chunk.title else ""
        entities, triples, keywords = [page] if page else [], [], []
        if "gear" in self.prompts:
            read = self._ask(
                GEAR_EXTRACTION.format(wiki_title=chunk.title, passage=chunk.text),
                parse_entities_and_triples,
            )
            if read:
                entities += [token_key(e) for e in read[0]]
                triples = [
                    Triple(token_key(s), " ".join(p.lower().split()), token_key(o))
                    for s, p, o in read[1]
                ]
        if "gnn_ret" in self.prompts:
            links = self._ask(GNN_RET_LINKS.format(passage=chunk.text), parse_entity_links)
            entities += [token_key(name) for name in links or []]
        if "iier" in self.prompts:
            keywords = [
                token_key(k)
                for k in self._ask(IIER_CHUNK_KEYWORDS.format(chunk=chunk.text), parse_string_list)
                or []
            ][:5]
        return Extraction(
            chunk_id=chunk.id,
            entities=tuple(dict.fromkeys(e for e in entities if e)),
            keywords=tuple(dict.fromkeys(k for k in keywords if k)),
            triples=tuple(dict.fromkeys(t for t in triples if t.subject and t.object)),
        )

    def _ask(self, prompt: str, parse: Callable[[str], T]) -> T | None:
        """Complete and parse with one repair request; an unreadable reply is counted, skipped."""

        def send(text: str) -> tuple[str, Usage]:
            return self._complete(text), no_usage()  # _complete caches and counts tokens itself

        try:
            value, _ = parse_with_repair(send, prompt, parse)
        except LLMReplyError:
            self._count(parse_failures=1)
            return None
        return value

    def _complete(self, prompt: str) -> str:
        """Return the reply to ``prompt``: from the cache, or from the model (then cached)."""
        cached = self.cache.get(self.model_name, prompt)
        if cached is not None:
            self._count(cached=1)
            return cached.text
        message = invoke(self.chat, [HumanMessage(prompt)])
        usage: dict[str, Any] = getattr(message, "usage_metadata", None) or {}
        reply = CachedReply(
            str(message.content),
            int(usage.get("input_tokens", 0)),
            int(usage.get("output_tokens", 0)),
        )
        self.cache.put(self.model_name, prompt, reply)
        self._count(
            requests=1, prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens
        )
        return reply.text

    def close(self) -> None:
        """Close the reply cache."""
        self.cache.close()

    def _count(self, **deltas: int) -> None:
        with self._lock:
            for key, value in deltas.items():
                self.stats[key] += value

    def _postfix(self) -> dict[str, int]:
        s = self.stats
        return {
            "requests": s["requests"],
            "cached": s["cached"],
            "tokens": s["prompt_tokens"] + s["completion_tokens"],
        }
