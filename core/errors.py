"""Errors users can act on: each says what went wrong and how to fix it."""

from __future__ import annotations

import logging
import re
from pathlib import Path


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


class TooLargeError(InputError):
    """An input is larger than a server accepts (HTTP 413)."""


class UnknownMethodError(HopgraphError):
    """A retrieval method name is not in the registry."""


class LLMServerError(HopgraphError):
    """The LLM server could not be reached, refused, or failed (after the client's retries)."""


class LLMReplyError(HopgraphError):
    """An LLM's reply could not be read, even after one request to repair it."""


_ABSOLUTE = re.compile(r"(?<![\w.:/~-])/(?:[^\s/'\"`]+/)*([^\s/'\"`]+)")
"""An absolute POSIX path not inside a word, a URL or a relative path: its last part is kept."""


def without_paths(text: str, root: Path) -> str:
    """Return ``text`` naming no server path: the index ``root`` by its name, others by theirs.

    What a server replies goes to clients that must not learn where it keeps its files; a hint
    such as "`hopgraph graph build --index idx`" stays a command run from the index's folder.
    """
    for form in sorted({str(root.resolve()), str(root)}, key=len, reverse=True):
        text = text.replace(form, root.name)
    return _ABSOLUTE.sub(r"\1", text)


def public_reply(err: BaseException, root: Path) -> dict[str, str | None]:
    """Return a server's ``{"error", "hint"}`` for ``err``, naming no server path.

    A HopgraphError says what to fix; any other error is a fault of the server, whose log has
    its traceback (logged here): the client is told its kind only.
    """
    if isinstance(err, HopgraphError):
        hint = without_paths(err.hint, root) if err.hint else None
        return {"error": without_paths(err.message, root), "hint": hint}
    logging.getLogger("hopgraph.server").error("request failed", exc_info=err)
    return {"error": f"the server failed ({type(err).__name__}); its log has the details",
            "hint": None}  # fmt: skip


def public_text(err: BaseException, root: Path) -> str:
    """Return :func:`public_reply` as one text, worded as a HopgraphError prints."""
    reply = public_reply(err, root)
    return str(HopgraphError(str(reply["error"]), reply["hint"]))
