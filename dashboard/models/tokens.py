from __future__ import annotations

from django.conf import settings
from django.db import models

from dashboard.models.sessions import Source


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def active(self) -> ApiTokenQuerySet:
        return self.filter(revoked_at__isnull=True)


class ApiToken(models.Model):
    """A per-source bearer token for the ingestion API. Only the SHA-256 of the secret is kept."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, help_text="What holds the token, e.g. the host's name.")
    prefix = models.CharField(max_length=16, help_text="The first characters of the secret, to find it.")
    hash = models.CharField(max_length=64, help_text="Hex SHA-256 of the whole secret.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        indexes = [models.Index(fields=["prefix"], name="api_token_prefix")]
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.source}/{self.name} ({self.prefix}…)"

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None
