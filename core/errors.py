"""Errors users can act on: each says what went wrong and how to fix it."""

from __future__ import annotations

import errno
import logging
import re
import shutil
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


class DiskFullError(HopgraphError):
    """A write ran out of space (or of quota) on its device; the index is as it was."""


_FULL = re.compile(
    r"No space left on device|Disk quota exceeded|database or disk is full"
    r"|\d+ requested and \d+ written"  # numpy's short write, which carries no errno
)
"""How a full device reads once a library (SQLite, Chroma, numpy, a child's error) made it text."""


def disk_full(err: BaseException | str) -> bool:
    """Tell whether ``err``, or an error it was raised from, is a full device (ENOSPC, EDQUOT).

    A string: an error's text (a finding, a child's error).
    """
    if isinstance(err, str):
        return _FULL.search(err) is not None
    seen: set[int] = set()
    at: BaseException | None = err
    while at is not None and id(at) not in seen:
        seen.add(id(at))
        if isinstance(at, OSError) and at.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if _FULL.search(str(at)):
            return True
        at = at.__cause__ or at.__context__
    return False


def disk_full_error(
    directory: Path, written: int = 0, committed: bool | None = False
) -> DiskFullError:
    """Return the error of a command on ``directory`` that found its device full.

    ``written``: the bytes the write had written when it failed (it needs more than that);
    the free space is measured now, after the unfinished write was undone. ``committed``: it
    failed after its commit, tidying up (the index holds the write; the next write finishes);
    ``None``: not in a write (the command stopped there).
    """
    try:
        usage = shutil.disk_usage(directory)
        free = f"{_size(usage.free)} of {_size(usage.total)} free"
    except OSError:
        free = "its free space unknown"
    need = f"; the write needs more than the {_size(written)} it had written" if written else ""
    done = {
        True: "the write was committed; what it left to remove goes at the next write",
        False: "the write was not committed: the index is as it was before it, no repair needed",
        None: "the command stopped there",
    }[committed]
    return DiskFullError(
        f"no space left on the device that holds {directory} ({free}{need}); {done}",
        "free space on that device (or raise the quota), then run the command again",
    )


def _size(n: int) -> str:
    for unit in ("bytes", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return f"{n:.1f} TB"


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
