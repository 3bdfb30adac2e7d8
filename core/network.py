"""The servers' network rules: which addresses only this machine can reach, and bearer tokens."""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import sys
from collections.abc import Callable, Iterable
from typing import Any

from .config import positive_number
from .errors import InputError, TooLargeError

MAX_K = 50
"""Passages a server returns for one request, at most."""
MAX_QUESTION = 10_000
"""Characters of a question a server accepts: a page of text; a longer one is not a question."""
MAX_REQUEST_LINE = 1 << 20
"""Bytes of a request's head the page's server reads (h11's own limit, 16 KiB, would answer a
long question with a plain-text 400 before the application sees it; past 1 MiB it still does)."""


def checked_k(value: str | int, name: str = "k") -> int:
    """Return a request's ``k`` parsed as the CLI's ``-k`` (core.config); InputError if not 1–50."""
    try:
        k = positive_number(value)
    except ValueError as err:
        raise InputError(
            f"{name} must be a whole number from 1 to {MAX_K}: {err}", "e.g. 5"
        ) from None
    if k > MAX_K:
        raise InputError(f"{name} must be a whole number from 1 to {MAX_K}, got {k}", "e.g. 5")
    return k


def checked_text(text: object, what: str = "the query") -> str:
    """Return a query's text stripped, as every surface checks it; InputError if it is not text.

    Not a string, empty, holding a NUL or a lone surrogate (half of a UTF-16 pair, which no
    UTF-8 text holds: a client's broken encoding) is refused by name.
    """
    if not isinstance(text, str):
        raise InputError(f"{what} must be text, got {type(text).__name__}", "send a string")
    stripped = text.strip()
    if not stripped:
        raise InputError(f"{what} is empty", "ask a question or give some keywords")
    if "\0" in stripped:
        at = stripped.index("\0")
        raise InputError(f"{what} holds a NUL character (at {at})", "send text without NUL")
    try:
        stripped.encode("utf-8")
    except UnicodeEncodeError as err:
        raise InputError(
            f"{what} holds a lone surrogate (U+{ord(stripped[err.start]):04X} at {err.start}): "
            "not text",
            "send the text as UTF-8 (a surrogate pair stands for one character, never half)",
        ) from None
    return stripped


def checked_question(text: str) -> str:
    """Return the question stripped; InputError if it is not text, TooLargeError if too long."""
    question = checked_text(text, "the question")
    if len(question) > MAX_QUESTION:
        raise TooLargeError(
            f"the question is {len(question):,} characters; a server takes {MAX_QUESTION:,}",
            "ask a shorter question (the passages hold the text: ask about it)",
        )
    return question


def bearer_matches(authorization: str | bytes | None, token: str) -> bool:
    """Tell whether an ``Authorization`` header carries ``Bearer <token>``.

    The scheme is case-insensitive (RFC 9110 §11.1: ``bearer`` is valid), the token is not; it
    is compared in constant time.
    """
    if not authorization:
        return False
    text = authorization.decode("latin-1") if isinstance(authorization, bytes) else authorization
    scheme, _, credentials = text.strip().partition(" ")
    given = credentials.strip().encode("latin-1", "replace")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        given, token.encode("latin-1", "replace")
    )


def is_loopback(host: str) -> bool:
    """Tell whether ``host`` is only reachable from this machine (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: it may resolve to any interface


def parse_host_port(http: str, example: str = "127.0.0.1:8765") -> tuple[str, int]:
    """Split a server's ``HOST:PORT``, brackets dropped from an IPv6 host.

    A port outside 1–65535 is refused with a message that gives ``example``.
    """
    host, _, port = http.rpartition(":")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise InputError(
            f"--http wants HOST:PORT with a port from 1 to 65535, got {http!r}",
            f"e.g. --http {example}",
        )
    return host.strip("[]"), int(port)


def check_exposure(http: str, host: str, token: str | None) -> None:
    """Refuse to serve beyond this machine (a non-loopback ``host``) without a token."""
    if not token and not is_loopback(host):
        raise InputError(
            f"--http {http} would serve the index beyond this machine with no authentication",
            "set HOPGRAPH_TOKEN to a long random secret (clients then send "
            "'Authorization: Bearer <token>'), or bind 127.0.0.1",
        )


WILDCARDS = frozenset({"0.0.0.0", "::", ""})
"""Bind addresses that listen on every interface: they name no host a request may address."""


def host_name(value: str) -> str:
    """Return the host of a ``Host`` header or an origin's authority: no port, no brackets."""
    value = value.strip().lower()
    if value.startswith("["):  # [::1]:8766
        return value[1 : value.find("]")] if "]" in value else value
    name, colon, port = value.rpartition(":")
    return name if colon and port.isdigit() and ":" not in name else value


def origin_host(origin: str) -> str | None:
    """Return the host an ``Origin`` header names (None for ``null`` or no scheme)."""
    scheme, sep, rest = origin.strip().partition("://")
    if not sep or not scheme:
        return None
    return host_name(rest.split("/", 1)[0])


def refusal(
    host: str, origin: str | None, known: Callable[[str], bool], any_host: bool = False
) -> tuple[int, str, str] | None:
    """Return (status, error, hint) when a request must be refused (HostGuard's rule), else None.

    ``host``: the ``Host`` header; ``origin``: the ``Origin`` header, if any; ``known``: whether
    a host name (no port) is one the server answers to.
    """
    name = host_name(host)
    if not any_host and not known(name):
        return (421, f"this server does not answer to the host {name!r}",
                "address it as 127.0.0.1 or localhost, or name the host with --allow-host "
                "(HOPGRAPH_ALLOW_HOSTS for the LangGraph server)")  # fmt: skip
    if origin is not None:
        named = origin_host(origin)
        if named is None or not (known(named) or named == name):
            return 403, f"cross-site request from {origin!r} refused", (
                "open the page from this server's own address")  # fmt: skip
    return None


def loopback_name(name: str) -> bool:
    """Whether a host name (no port) can only mean this machine: localhost, *.localhost, 127/8."""
    return name == "localhost" or name.endswith(".localhost") or is_loopback(name)


class HostGuard:
    """ASGI middleware against DNS rebinding: only names the server knows, no cross-site calls.

    A web page can rebind its own name to 127.0.0.1 and then read a loopback server through the
    visitor's browser; the request still says ``Host: evil.example``. So a ``Host`` that is not
    a loopback address, ``localhost``, the address the server is bound to or one of ``allowed``
    (``--allow-host``) gets 421 (Misdirected Request), and an ``Origin`` that is none of those and
    not the request's own host gets 403; a request with more than one ``Host`` gets 400.
    ``token_required``: a server bound to every interface
    (0.0.0.0, ::) with its token required and no ``allowed`` names lets every ``Host`` in (the
    token, not the name, keeps strangers out; it cannot know its own names); ``Origin`` is still
    checked.
    """

    def __init__(
        self, app: Any, bound: str, allowed: Iterable[str] = (), token_required: bool = False
    ) -> None:
        bound, names = host_name(bound), {host_name(a) for a in allowed}
        self.app = app
        self.any_host = token_required and bound in WILDCARDS and not names
        self.names = frozenset(
            names | ({"localhost"} if bound in WILDCARDS else {"localhost", bound})
        )

    def knows(self, host: str) -> bool:
        """Whether ``host`` (a name, no port) is one this server answers to."""
        return host in self.names or loopback_name(host)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        """Refuse a misdirected or cross-site request; pass every other one on."""
        kind = scope.get("type")
        if kind not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        raw = scope.get("headers", [])
        headers = {k.lower(): v.decode("latin-1") for k, v in raw}
        host, origin = headers.get(b"host", ""), headers.get(b"origin")
        hosts = sum(1 for k, _ in raw if k.lower() == b"host")
        # two Host headers: each layer may read another one (the first passes the check, the
        # last reaches the application), so the request names no one host and is refused
        refused = (
            (400, f"the request has {hosts} Host headers", "send exactly one Host header")
            if hosts > 1
            else refusal(host, origin, self.knows, self.any_host)
            or forged_by_a_page(scope, headers)
        )
        if refused is None:
            return await self.app(scope, receive, send)
        if kind == "websocket":  # closed before the handshake completes: the client sees 403
            await receive()  # websocket.connect
            return await send({"type": "websocket.close", "code": 1008})
        return await _refuse(send, *refused)


PAGES = ("/", "/login")
"""The paths a browser may open from a link on another site (a navigation): the page itself."""
SIMPLE_BODIES = ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data")
"""The bodies a page on another site may POST without asking first (CORS's simple requests)."""


def forged_by_a_page(scope: dict, headers: dict[bytes, str]) -> tuple[int, str, str] | None:
    """Return a refusal for a request another site's page made the browser send, else None.

    Browsers say where a request comes from (``Sec-Fetch-Site``) even where they send no
    ``Origin`` (a GET, an ``<img>``, an ``EventSource``): ``cross-site`` is refused but for a
    navigation to the page itself (a link to it). ``same-site`` passes, as the ``Origin`` rule
    passes a loopback origin: the same site as a loopback server is this machine (another
    port, a tool such as the MCP Inspector). A POST of a simple body (text/plain, a form) is
    refused whatever sent it: the servers take JSON, and such a POST is the one a page on
    another site sends without a preflight.
    """
    site = headers.get(b"sec-fetch-site")
    navigation = headers.get(b"sec-fetch-mode") == "navigate" and scope.get("method") == "GET"
    if site == "cross-site" and not (navigation and scope["path"] in PAGES):
        return 403, f"a request another site's page sent ({site}) is refused", (
            "open the page from this server's own address")  # fmt: skip
    body = headers.get(b"content-type", "").split(";")[0].strip().lower()
    if scope.get("method") == "POST" and body in SIMPLE_BODIES:
        return 415, f"a POST of {body} is refused: this server takes JSON", (
            "send Content-Type: application/json")  # fmt: skip
    return None


async def _refuse(send: Any, status: int, error: str, hint: str) -> None:
    await send_json(send, status, {"error": error, "hint": hint})


async def send_json(send: Any, status: int, payload: dict, *headers: tuple[bytes, bytes]) -> None:
    """Answer an ASGI HTTP request with ``payload`` as JSON (the servers' refusals)."""
    body = json.dumps(payload).encode()
    start = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": [*start, *headers]})
    await send({"type": "http.response.body", "body": body})


def request_logger(name: str) -> logging.Logger:
    """Return a server's request log: one line a request on stderr at INFO (``name``'s logger).

    stderr, because stdout may be a transport (MCP over stdio); the line names the request,
    never the text of a query.
    """
    log = logging.getLogger(name)
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
    return log
