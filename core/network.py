"""The servers' network rules: which addresses only this machine can reach, and bearer tokens."""

from __future__ import annotations

import hmac
import ipaddress

from .errors import InputError


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
