"""Which headers the proxy forwards, returns and writes down.

Hop-by-hop headers (RFC 9110 §7.6.1) describe one connection and are never passed on. Credentials
are forwarded upstream, since the provider needs them, but never written anywhere: any header whose
name has a part like ``key``, ``token``, ``secret`` or ``auth`` is dropped from what is stored, and
so is a query parameter named that way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    }
)
SESSION_HEADER = "x-cachescope-session"
"""A client may name its session itself with this header; it is not forwarded upstream."""

_SECRET_PARTS = frozenset(
    {
        "auth",
        "authorization",
        "apikey",
        "key",
        "token",
        "secret",
        "password",
        "passwd",
        "cookie",
        "credential",
        "credentials",
        "signature",
    }
)
_NAME_PARTS = re.compile(r"[-_.]")


def is_secret_name(name: str) -> bool:
    """Whether a header or parameter name looks like it carries a credential.

    Names are split on ``-``, ``_`` and ``.``: ``x-api-key`` and ``set-cookie`` are secret,
    ``anthropic-ratelimit-tokens-remaining`` (a count, "tokens") is not.
    """
    lowered = name.lower()
    return lowered.replace("-", "").replace("_", "") in _SECRET_PARTS or any(
        part in _SECRET_PARTS for part in _NAME_PARTS.split(lowered)
    )


def _connection_listed(headers: Iterable[tuple[str, str]]) -> set[str]:
    """Headers a ``Connection`` header names, which are hop-by-hop for this connection only."""
    listed: set[str] = set()
    for name, value in headers:
        if name.lower() == "connection":
            listed.update(part.strip().lower() for part in value.split(",") if part.strip())
    return listed


def upstream_request_headers(
    headers: Iterable[tuple[str, str]], *, drop: Iterable[str] = ()
) -> list[tuple[str, str]]:
    """The client's headers as sent upstream, in order and repeated ones kept.

    ``Host`` and ``Content-Length`` are set for the upstream call by the HTTP client; the session
    header and the names in ``drop`` (the recording token's header) are the proxy's own.
    """
    pairs = list(headers)
    skipped = HOP_BY_HOP | _connection_listed(pairs) | {"host", "content-length", SESSION_HEADER}
    skipped |= {name.lower() for name in drop}
    return [(name, value) for name, value in pairs if name.lower() not in skipped]


def client_response_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The upstream response's headers as returned to the client (the framing is the proxy's)."""
    pairs = list(headers)
    skipped = HOP_BY_HOP | _connection_listed(pairs) | {"content-length"}
    return [(name, value) for name, value in pairs if name.lower() not in skipped]


def stored_headers(headers: Iterable[tuple[str, str]], *, drop: Iterable[str] = ()) -> dict[str, str]:
    """The headers as written to the store and the spool: no credentials, no per-hop framing, none of
    the names in ``drop`` (the recording token's header, whatever it is called)."""
    dropped = {name.lower() for name in drop}
    kept: dict[str, str] = {}
    for name, value in headers:
        lowered = name.lower()
        if lowered in HOP_BY_HOP or lowered in dropped or is_secret_name(lowered):
            continue
        kept[name] = value
    return kept


def stored_url(url: str) -> str:
    """A URL as written down: query parameters named like a credential (``?key=``) removed."""
    parts = urlsplit(url)
    if not parts.query:
        return url
    query = [(name, value) for name, value in parse_qsl(parts.query, keep_blank_values=True)]
    kept = [(name, value) for name, value in query if not is_secret_name(name)]
    return urlunsplit(parts._replace(query=urlencode(kept)))


def header_value(headers: Mapping[str, str], name: str) -> str:
    """A header's value by case-insensitive name ("" when absent)."""
    wanted = name.lower()
    for key, value in headers.items():
        if key.lower() == wanted:
            return value
    return ""
