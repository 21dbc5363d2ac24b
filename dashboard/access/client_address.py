"""The address of the client behind a request, read through the proxies the operator trusts.

``X-Forwarded-For`` is written by whoever sends the request, so it is believed only as far as the
proxies in ``CACHESCOPE_TRUSTED_PROXIES`` vouch for it: walking it from the right (each proxy appends
the address it heard from), the first address that is not a trusted proxy is the client's. With no
trusted proxy, or a request that did not come through one, the client is the connection's peer.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def trusted_proxy_networks(
    values: Iterable[str], *, setting: str = "CACHESCOPE_TRUSTED_PROXIES"
) -> list[Network]:
    """Parse addresses or networks (``10.0.0.9``, ``10.0.0.0/8``); a bad one names the setting and value."""
    networks = []
    for value in values:
        try:
            networks.append(ipaddress.ip_network(value, strict=False))
        except ValueError:
            raise ImproperlyConfigured(f"{setting}: {value!r} is not an IP address or network") from None
    return networks


def _is_trusted(address: str, networks: list[Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in networks)


def client_address(request: HttpRequest) -> str:
    """The client's address: the peer, or the nearest forwarded address no trusted proxy added."""
    peer = str(request.META.get("REMOTE_ADDR", ""))
    networks = trusted_proxy_networks(settings.CACHESCOPE_TRUSTED_PROXIES)
    if not networks or not _is_trusted(peer, networks):
        return peer
    forwarded = [part.strip() for part in str(request.META.get("HTTP_X_FORWARDED_FOR", "")).split(",")]
    for address in reversed(forwarded):
        try:
            ipaddress.ip_address(address)
        except ValueError:
            break  # garbled past here: trust nothing further left
        if not _is_trusted(address, networks):
            return address
    return peer
