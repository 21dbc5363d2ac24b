"""Which client release sent a request, as one comparable string: ``"<client> <version>"``.

Sources state it in their own way: a Claude Code transcript line has ``version`` ("2.1.38"), a
capture's request headers have ``User-Agent`` (Claude Code sends ``claude-cli/1.0.6 (external,
cli)``), a Codex rollout's ``session_meta`` has ``cli_version``. The same client gets the same name
whichever source told it, so "which release regressed the hit rate?" compares releases, not sources.
A dsh log states no client version: the harness's session header (``SessionHeader`` in its
``packages/core/session/src/types.ts``) has only the log's format version.
"""

from __future__ import annotations

import re

MAX_LENGTH = 60
"""The longest client version kept (the store's column)."""

CLIENT_ALIASES = {"claude-cli": "claude-code", "codex_cli_rs": "codex", "codex-cli": "codex"}
"""User-Agent product names of clients that other sources name otherwise."""

_PRODUCT = re.compile(r"([A-Za-z][\w.+-]*)/(\d[\w.+-]*)")


def client_version(client: str, version: str) -> str:
    """``"<client> <version>"``, or ``""`` when the version is empty."""
    version = version.strip()
    if not version:
        return ""
    return f"{CLIENT_ALIASES.get(client, client)} {version}"[:MAX_LENGTH]


def user_agent_version(user_agent: str) -> str:
    """The client and version of a ``User-Agent`` header's first product (``name/version``); ``""``
    when it names none."""
    found = _PRODUCT.search(user_agent or "")
    if found is None:
        return ""
    return client_version(found.group(1), found.group(2))


def version_sort_key(value: str) -> tuple[str, tuple[int, ...], str]:
    """Orders client versions by client, then by release number (1.0.10 after 1.0.9)."""
    client, _, version = value.partition(" ")
    numbers = tuple(int(part) for part in re.findall(r"\d+", version))
    return client, numbers, version
