from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import models
from django.db.models.functions import Cast
from django.urls import reverse
from django.utils import timezone

EVENTS_PER_PAGE = 200
"""Events a page of the session's timeline reads at most; ``?page=N`` starts at seq (N - 1) times this."""


class Source(models.Model):
    """One agent host or deployment that sends logs to this dashboard."""

    name = models.SlugField(max_length=100, unique=True)
    kind = models.CharField(max_length=40, blank=True, help_text="What runs there, e.g. claude-code or dsh.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class SessionQuerySet(models.QuerySet["Session"]):
    def labelled(self, key: str, value: str) -> SessionQuerySet:
        """The sessions whose label ``key`` is ``value`` (``value`` empty: that have the label)."""
        if value:
            return self.filter(**{f"labels__{key}": value})
        return self.filter(labels__has_key=key)

    def active_between(self, since: datetime | None, until: datetime | None) -> SessionQuerySet:
        """The sessions with activity in ``[since, until)``: last active at or after ``since``,
        started before ``until`` (either bound may be open). A session without a wall-clock time
        (:attr:`Session.dated`) has no activity to place, so it is in no window."""
        sessions = self.filter(started_at__isnull=False)
        if since is not None:
            sessions = sessions.filter(last_activity__gte=since)
        if until is not None:
            sessions = sessions.filter(started_at__lt=until)
        return sessions

    def search(self, text: str) -> SessionQuerySet:
        """The sessions whose title, id or folder holds ``text``, or whose conversation does: the
        words of any user or assistant message (:func:`conversation_events`)."""
        text = text.strip()
        if not text:
            return self
        said = conversation_events(text)
        return self.filter(
            models.Q(external_id__icontains=text)
            | models.Q(title__icontains=text)
            | models.Q(cwd__icontains=text)
            | models.Q(pk__in=said.values("session_id"))
        )


CONVERSATION_TYPES = ("user/message", "assistant/message")
"""The events a search of the conversation reads: what the user and the model said."""
TEXT_SEARCH_CONFIG = "simple"
"""No stemming and no stop words: logs hold code, paths and many languages."""


class MessageMatches(models.Func):
    """Whether an event's JSON string values hold every word of ``text``:
    ``plainto_tsquery('simple', text)`` against the message's ``words`` (migration 0051), the
    column the GIN index covers, or, for a message whose words the ingest's follow-up has not
    filled yet, against ``to_tsvector('simple', data)`` computed here, over the partial index of
    such messages. Takes the event's ``data`` and the text."""

    output_field = models.BooleanField()

    def as_sql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:
        data, text = (compiler.compile(expression) for expression in self.get_source_expressions())
        column = connection.ops.quote_name("data")
        if not data[0].endswith(column):
            raise ValueError(f"MessageMatches reads an event's data column, not {data[0]}")
        # ``words`` is PostgreSQL's alone, outside the model: the same table's column beside data.
        words = data[0].removesuffix(column) + connection.ops.quote_name("words")
        config = f"'{TEXT_SEARCH_CONFIG}'::regconfig"
        query = f"plainto_tsquery({config}, {text[0]})"
        sql = f"({words} @@ {query} OR ({words} IS NULL AND to_tsvector({config}, {data[0]}) @@ {query}))"
        return sql, [*text[1], *data[1], *text[1]]


def conversation_events(text: str) -> models.QuerySet[Event]:
    """The user and assistant messages that hold ``text``: on PostgreSQL every word of it, by
    full-text search over the GIN index; on SQLite the text itself, by LIKE over the stored JSON
    (no index: the embedded mode's fleets are small)."""
    from django.db import connection

    messages = Event.objects.filter(type__in=CONVERSATION_TYPES)
    if connection.vendor == "postgresql":
        return messages.filter(MessageMatches(models.F("data"), models.Value(text)))
    return messages.alias(data_text=Cast("data", models.TextField())).filter(data_text__icontains=text)


class Session(models.Model):
    """One conversation or agent run, with summary columns kept for the list page."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="sessions")
    external_id = models.CharField(max_length=200)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children"
    )
    parent_external_id = models.CharField(max_length=200, blank=True)
    lineage = models.CharField(max_length=20, default="main")
    title = models.CharField(max_length=300, blank=True)
    cwd = models.CharField(max_length=500, blank=True)
    format = models.CharField(max_length=40)
    format_version = models.CharField(max_length=20, blank=True)
    client_version = models.CharField(
        max_length=60, blank=True, help_text="The client release of the latest request that named one."
    )
    source_path = models.CharField(max_length=1000, blank=True)
    labels = models.JSONField(
        default=dict,
        blank=True,
        help_text="Who or what the session belongs to, as its source named them (user.email, ...).",
    )
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    unfoldable = models.TextField(blank=True, help_text="Why the log cannot be folded; empty when it can.")
    crash_tail = models.TextField(blank=True, help_text="An incomplete last record that was dropped.")

    # Summary columns, recomputed after each ingest so the list never aggregates events per request.
    event_count = models.PositiveIntegerField(default=0)
    request_count = models.PositiveIntegerField(default=0)
    uncached_input_tokens = models.BigIntegerField(default=0)
    # Null when no request reported the bucket (DeepSeek reports no cache writes): unknown, not 0.
    cache_read_tokens = models.BigIntegerField(null=True, blank=True)
    cache_write_tokens = models.BigIntegerField(null=True, blank=True)
    cache_write_1h_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    hit_rate = models.FloatField(null=True, blank=True, help_text="Null when no provider usage was reported.")
    warning_count = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(
        max_digits=16,
        decimal_places=8,
        null=True,
        blank=True,
        help_text="The session's cost at the prices of the table, kept so the list can sort by it; null "
        "until priced, or when no request has a price (dashboard.costs.session_costs.sessions_reprice).",
    )
    unpriced_requests = models.PositiveIntegerField(
        default=0, help_text="Requests whose model no price matched: counted in the tokens, not in the cost."
    )
    models_used = models.CharField(max_length=500, blank=True, help_text="Comma-separated model names.")
    # Never null, so the list's default order (newest activity first) can walk its index.
    last_activity = models.DateTimeField(default=timezone.now)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = SessionQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "external_id"], name="session_unique_per_source"),
        ]
        indexes = [
            # The list's default order, newest activity first with the id as tie-breaker.
            models.Index(fields=["-last_activity", "-id"], name="session_recent_activity"),
            models.Index(fields=["source", "-last_activity"], name="session_source_recent"),
            models.Index(fields=["hit_rate"], name="session_hit_rate"),
            models.Index(fields=["external_id"], name="session_external_id"),
            models.Index(fields=["client_version"], name="session_client_version"),
        ]
        ordering = ["-last_activity", "-id"]

    def __str__(self) -> str:
        return self.title or self.external_id

    def get_absolute_url(self) -> str:
        return reverse("dashboard:session", args=[self.pk])

    def event_url(self, seq: int) -> str:
        """The timeline from event ``seq`` on, scrolled to it."""
        return self.event_url_of(self.pk, seq)

    @staticmethod
    def event_url_of(session_id: int, seq: int) -> str:
        """:meth:`event_url` without loading the session."""
        return f"{reverse('dashboard:session', args=[session_id])}?from={seq}#seq-{seq}"

    @property
    def prompt_tokens(self) -> int:
        return self.uncached_input_tokens + (self.cache_read_tokens or 0) + (self.cache_write_tokens or 0)

    @property
    def models_list(self) -> list[str]:
        return [name for name in self.models_used.split(",") if name]

    @property
    def dated(self) -> bool:
        """Whether its log gave any wall-clock time. Without one (a header-only log, a test clock's
        times) :attr:`last_activity` is only when the session was stored, which dates nothing."""
        return self.started_at is not None


class Event(models.Model):
    """One event of a session's append-only log. Never updated; deleted only with its session."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    type = models.CharField(max_length=80)
    time = models.DateTimeField(null=True, blank=True)
    data = models.JSONField(default=dict)
    surface_op = models.JSONField(null=True, blank=True)
    source_event_seqs = models.JSONField(null=True, blank=True)
    ignorable = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "seq"], name="event_unique_seq")]
        indexes = [models.Index(fields=["session", "type"], name="event_session_type")]
        ordering = ["session", "seq"]

    def __str__(self) -> str:
        return f"{self.session_id}#{self.seq} {self.type}"
