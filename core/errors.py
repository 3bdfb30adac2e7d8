"""Errors users can act on: each says what went wrong and how to fix it."""

from __future__ import annotations


class HopgraphError(Exception):
    """Base of every error hopgraph raises on bad input or a bad state.

    Args:
        message: what went wrong, in the user's terms.
        hint: how to fix it (optional).
    """

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


class InputError(HopgraphError):
    """A corpus, a question file or an argument is missing, unreadable or malformed."""


class IndexStateError(HopgraphError):
    """An index directory is missing, damaged, or was built by another version or model."""


class UnknownMethodError(HopgraphError):
    """A retrieval method name is not in the registry."""


class LLMServerError(HopgraphError):
    """The LLM server could not be reached, refused, or failed (after the client's retries)."""


class LLMReplyError(HopgraphError):
    """An LLM's reply could not be read, even after one request to repair it."""
