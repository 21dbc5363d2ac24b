"""``--diagnose``: ask Anthropic why each call's prompt cache missed.

Anthropic's cache diagnostics (platform docs, "Cache diagnostics") compare a Messages request with
the one that produced ``diagnostics.previous_message_id`` and answer with
``diagnostics.cache_miss_reason``, on the response body or, streamed, on ``message_start``'s
message. The request opts in with ``"diagnostics": {"previous_message_id": null}`` on a
conversation's first call and the previous response's ``id`` after, and with the beta header
``cache-diagnosis-2026-04-07`` (required while the feature was in beta, accepted since).

The field is spliced into the body's bytes right after its opening brace, so every other byte the
client sent reaches the API as it was sent. A body that already has ``diagnostics`` is the
client's own choice and is left alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

BETA_HEADER = "anthropic-beta"
BETA = "cache-diagnosis-2026-04-07"


def wants_diagnostics(method: str, path: str, body: Mapping[str, Any] | None) -> bool:
    """Whether a call is a Messages POST with a JSON object body that does not ask on its own."""
    return (
        method == "POST"
        and path.rstrip("/").endswith("/v1/messages")
        and body is not None
        and "diagnostics" not in body
    )


def with_diagnostics(raw: bytes, previous_message_id: str | None) -> bytes:
    """``raw`` (a JSON object) with ``diagnostics`` added as its first member."""
    start = raw.index(b"{") + 1
    member = b'"diagnostics":' + orjson.dumps({"previous_message_id": previous_message_id})
    rest = raw[start:].lstrip()
    separator = b"" if rest.startswith(b"}") else b","
    return raw[:start] + member + separator + raw[start:]


def with_beta(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``headers`` with the diagnostics beta added to ``anthropic-beta`` (created when absent)."""
    out: list[tuple[str, str]] = []
    added = False
    for name, value in headers:
        if name.lower() == BETA_HEADER and not added:
            if BETA not in (part.strip() for part in value.split(",")):
                value = f"{value},{BETA}" if value.strip() else BETA
            added = True
        out.append((name, value))
    if not added:
        out.append((BETA_HEADER, BETA))
    return out
