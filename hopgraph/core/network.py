"""Which addresses only this machine can reach (the servers' rule for running without a token)."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """Tell whether ``host`` is only reachable from this machine (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: it may resolve to any interface
