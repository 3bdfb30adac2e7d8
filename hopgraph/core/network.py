"""The servers' network rules: which addresses only this machine can reach, and bearer tokens."""

from __future__ import annotations

import hmac
import ipaddress


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
