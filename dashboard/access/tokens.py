"""Per-source API tokens: created with a secret shown once, stored as a SHA-256, revoked by admins.

A secret looks like ``csk_`` followed by 43 URL-safe characters. Its first :data:`PREFIX_LENGTH`
characters are stored in clear so a presented secret finds its row with an indexed lookup; the
whole secret is only ever compared as a digest, in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime, timedelta

from django.contrib.auth.models import User
from django.db.models import Q

from dashboard.models import ApiToken, Source

SECRET_PREFIX = "csk_"  # noqa: S105 - a public marker that makes leaked secrets easy to scan for
PREFIX_LENGTH = 12
LAST_USED_RESOLUTION = timedelta(minutes=1)
"""``last_used_at`` is written at most once a minute per token, so busy hosts do not queue on one row."""


def secret_digest(secret: str) -> str:
    """Hex SHA-256 of a secret, as stored in :attr:`ApiToken.hash`."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def token_create(*, source: Source, name: str, created_by: User | None) -> tuple[ApiToken, str]:
    """Create a token for ``source``; return it and its secret, which is never stored or shown again."""
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        source=source,
        name=name,
        prefix=secret[:PREFIX_LENGTH],
        hash=secret_digest(secret),
        created_by=created_by,
    )
    return token, secret


def token_authenticate(*, secret: str, now: datetime) -> ApiToken | None:
    """The active token whose secret is ``secret``, or ``None``; records when it was last used."""
    if len(secret) <= PREFIX_LENGTH or not secret.startswith(SECRET_PREFIX):
        return None
    presented = secret_digest(secret)
    found = None
    candidates = ApiToken.objects.active().filter(prefix=secret[:PREFIX_LENGTH]).select_related("source")
    for candidate in candidates:
        # Every candidate is compared, so the time taken does not tell which one matched.
        if hmac.compare_digest(candidate.hash, presented):
            found = candidate
    if found is not None:
        stale = Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_RESOLUTION)
        if ApiToken.objects.filter(stale, pk=found.pk).update(last_used_at=now):
            found.last_used_at = now
    return found


def token_revoke(*, token: ApiToken, now: datetime) -> bool:
    """Revoke ``token`` from now on; ``False`` when it was already revoked."""
    revoked = ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=now)
    if revoked:
        token.revoked_at = now
    return bool(revoked)
