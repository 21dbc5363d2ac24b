from __future__ import annotations

from django.db import models
from django.db.models import F, Value
from django.db.models.functions import Coalesce, NullIf
from django.urls import reverse

from dashboard.models.sessions import Session
from projections.hit_rate import hit_rate

CHAIN_MAX_LENGTH = 40


def current_lineage() -> Coalesce:
    """The query expression of :attr:`Request.current_lineage`, for ``values_list`` and filters."""
    return Coalesce(NullIf(F("chain"), Value("")), F("lineage"))


class RequestQuerySet(models.QuerySet["Request"]):
    def in_lineage(self, name: str) -> RequestQuerySet:
        """The requests whose :attr:`Request.current_lineage` is ``name``."""
        return self.filter(models.Q(chain=name) | models.Q(chain="", lineage=name))


class Request(models.Model):
    """One provider call: what was sent (as block hashes) and what the provider reported.

    Two lineages: ``lineage`` is the role the importer gave the call (``main``, ``side``,
    ``subagent``), which the analysis starts from; ``chain`` is the lineage the analysis decided
    from the bodies (``main``, ``side-2``, ...), kept empty where it is the importer's. The pages,
    the request list's filter, the context chart and the costs read :attr:`current_lineage` (the
    analysis's once it ran), as ``explain`` names the analysis's, so they all name the same chain.
    """

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="requests")
    ordinal = models.PositiveIntegerField()
    key = models.CharField(max_length=200, help_text="The source's own request id, or a derived stable key.")
    lineage = models.CharField(
        max_length=20, default="main", help_text="The role the importer gave the call."
    )
    chain = models.CharField(
        max_length=CHAIN_MAX_LENGTH,
        blank=True,
        help_text=(
            "The lineage the analysis gave the call; empty until the session is analysed, and where "
            "it is the importer's lineage."
        ),
    )
    provider = models.CharField(max_length=40)
    platform = models.CharField(max_length=40, blank=True)
    api = models.CharField(max_length=20, blank=True)
    model = models.CharField(max_length=120, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    first_token_at = models.DateTimeField(null=True, blank=True)
    status = models.PositiveSmallIntegerField(null=True, blank=True)

    # What was sent, when the source logged the body: cache-keying parameters, the ordered units
    # ([block hash, tier, role, message index, block index, message id]) and the markers.
    params = models.JSONField(default=dict, blank=True)
    units = models.JSONField(default=list, blank=True)
    markers = models.JSONField(default=list, blank=True)
    has_body = models.BooleanField(default=False)
    render_warnings = models.JSONField(default=list, blank=True, help_text="What rendering found amiss.")

    # The context the request carried, priced from its body at ingest with the meter's heuristic
    # (projections.request_breakdown); null when the source logged no body. event_seq is the event
    # that answers the call, so the session page puts these figures at the right place in the log.
    event_seq = models.PositiveIntegerField(null=True, blank=True)
    system_tokens = models.PositiveIntegerField(null=True, blank=True)
    tools_tokens = models.PositiveIntegerField(null=True, blank=True)
    message_tokens = models.PositiveIntegerField(null=True, blank=True)
    context_window = models.PositiveIntegerField(
        null=True, blank=True, help_text="The model's window as this call showed it (the 1M beta header)."
    )

    # Usage in exclusive buckets; null means "not reported", which is not 0.
    uncached_input_tokens = models.BigIntegerField(null=True, blank=True)
    cache_read_tokens = models.BigIntegerField(null=True, blank=True)
    cache_write_5m_tokens = models.BigIntegerField(null=True, blank=True)
    cache_write_1h_tokens = models.BigIntegerField(null=True, blank=True)
    output_tokens = models.BigIntegerField(null=True, blank=True)
    usage_convention = models.CharField(max_length=20, blank=True)
    usage_raw = models.JSONField(default=dict, blank=True, help_text="The source's own usage fields.")

    # The provider's own reason for a cache miss, as its response stated it (Anthropic's
    # diagnostics.cache_miss_reason.type, OpenAI's prompt_cache_diagnostics reason or type): empty
    # when the response stated none. See projections.providers.diagnosis.
    provider_miss_reason = models.CharField(max_length=60, blank=True)
    provider_missed_tokens = models.BigIntegerField(
        null=True, blank=True, help_text="The tokens the provider says fell after the divergence."
    )
    client_version = models.CharField(
        max_length=60, blank=True, help_text='The client release that sent the call: "<client> <version>".'
    )
    endpoint = models.CharField(
        max_length=200,
        blank=True,
        help_text="The host the call was sent to, when the source logged its URL (a gateway, a server).",
    )

    objects = RequestQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "key"], name="request_unique_key")]
        indexes = [
            models.Index(fields=["session", "ordinal"], name="request_session_ordinal"),
            models.Index(fields=["started_at"], name="request_started"),
            models.Index(fields=["client_version"], name="request_client_version"),
            # The list filters' models, read value by value off it (dashboard.storage.distinct_values),
            # and the requests list filtered to one model.
            models.Index(fields=["model", "started_at"], name="request_model_started"),
            # The few requests whose response stated a cache-miss reason, for the overview's panel.
            models.Index(
                fields=["started_at"],
                name="request_stated_miss",
                condition=~models.Q(provider_miss_reason=""),
            ),
            # The requests list's pages sorted by these figures are read off the index.
            models.Index(fields=["uncached_input_tokens", "id"], name="request_uncached_id"),
            models.Index(fields=["cache_read_tokens", "id"], name="request_read_id"),
        ]
        ordering = ["session", "ordinal"]

    def __str__(self) -> str:
        return f"{self.session_id}/{self.number} {self.model}"

    def get_absolute_url(self) -> str:
        return reverse("dashboard:request", args=[self.pk])

    @property
    def number(self) -> int:
        """The request's place in its session as people count, from 1; ``ordinal`` is stored from 0."""
        return self.ordinal + 1

    @property
    def current_lineage(self) -> str:
        """The analysis's lineage once the session was analysed, else the importer's role."""
        return self.chain or self.lineage

    @property
    def cache_write_tokens(self) -> int | None:
        if self.cache_write_5m_tokens is None and self.cache_write_1h_tokens is None:
            return None
        return (self.cache_write_5m_tokens or 0) + (self.cache_write_1h_tokens or 0)

    @property
    def prompt_tokens(self) -> int | None:
        parts = (self.uncached_input_tokens, self.cache_read_tokens, self.cache_write_tokens)
        if all(part is None for part in parts):
            return None
        return sum(part or 0 for part in parts)

    @property
    def hit_rate(self) -> float | None:
        """read ÷ (uncached + read + writes), by the rule of :func:`projections.hit_rate.hit_rate`."""
        return hit_rate(
            read=self.cache_read_tokens, uncached=self.uncached_input_tokens, writes=self.cache_write_tokens
        )


class Block(models.Model):
    """A content-addressed unit of a rendered request, stored once however often it is sent.

    Two hundred turns of one conversation re-send the same tools, system prompt and history; each
    distinct unit is one row, and requests refer to it by hash.
    """

    hash = models.CharField(max_length=32, primary_key=True)
    kind = models.CharField(max_length=40)
    canonical = models.TextField(help_text="Stable JSON of the unit without cache_control.")
    chars = models.PositiveIntegerField()
    tokens = models.PositiveIntegerField(help_text="Heuristic estimate (characters / 4).")

    def __str__(self) -> str:
        return f"{self.kind}:{self.hash}"
