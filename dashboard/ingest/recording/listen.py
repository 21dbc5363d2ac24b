"""Where the proxy listens, and the rule that anywhere but loopback needs a recording token.

On loopback only the local user's programs can reach the proxy. Anywhere else, anyone who can
reach the port could send calls through it (on their own key) into this dashboard's store, so the
proxy refuses to start there without a token that callers must send.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass


class ListenError(ValueError):
    """A listen address the proxy will not use, with why."""


@dataclass(frozen=True, slots=True)
class ListenAddress:
    host: str
    port: int

    @property
    def is_loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False


def parse_listen(value: str) -> ListenAddress:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) as an address; :class:`ListenError` when malformed."""
    host, sep, port = value.rpartition(":")
    if not sep or not host:
        raise ListenError(f"--listen {value!r}: expected HOST:PORT, e.g. 127.0.0.1:8788")
    host = host.removeprefix("[").removesuffix("]")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ListenError(f"--listen {value!r}: the port must be a number from 0 to 65535")
    return ListenAddress(host=host, port=int(port))


def check_exposure(address: ListenAddress, token: str) -> None:
    """Refuse a non-loopback address without a recording token."""
    if not address.is_loopback and not token:
        raise ListenError(
            f"refusing to listen on {address.host}, which is not loopback, without a recording token: "
            "pass --token (or set CACHESCOPE_RECORD_TOKEN) and have clients send it in --token-header"
        )
