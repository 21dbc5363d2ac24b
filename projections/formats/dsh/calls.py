"""Provider calls recovered from a dsh log.

A dsh log records each model reply as an ``assistant/message`` with the provider's usage, and each
compaction's summarizer call as a ``compaction/summary`` with its usage. Each is one provider call:
the dashboard counts them as requests (usage only, no body), with the provider and model taken from
the latest ``request/header`` or ``request/context`` event before them.
"""

from __future__ import annotations

from collections.abc import Mapping

from projections.normalized import JSON, EventRecord, Lineage, LineError, RequestRecord
from projections.usage import UsageError, dsh_usage

CALL_EVENTS = {"assistant/message": "data.usage", "compaction/summary": "data.usage"}


class DshCalls:
    """Turns a session's events, in order, into its provider calls."""

    def __init__(self, path: str, lineage: Lineage) -> None:
        self.path = path
        self.lineage = lineage
        self.provider = ""
        self.model = ""
        self.ordinal = 0

    def observe(self, event: EventRecord) -> RequestRecord | LineError | None:
        """The call ``event`` records, a usage error, or ``None`` when it records none."""
        if event.type in ("request/header", "request/context"):
            self._note_target(event.data)
            return None
        if event.type not in CALL_EVENTS or not isinstance(event.data.get("usage"), Mapping):
            return None
        try:
            usage = dsh_usage(event.data["usage"])
        except UsageError as error:
            return LineError(self.path, event.line, f"{CALL_EVENTS[event.type]}.{error.field}", error.reason)
        model = event.data.get("model")
        record = RequestRecord(
            key=f"seq-{event.seq}",
            ordinal=self.ordinal,
            # The summarizer's call of a compaction is the compaction's own lineage, never the chain's.
            lineage=self.lineage if event.type == "assistant/message" else "compaction",
            provider=str(event.data.get("provider") or self.provider or "unknown"),
            platform="",
            api="",
            model=model if isinstance(model, str) and model else self.model,
            started_at=event.time,
            usage=usage,
            line=event.line,
        )
        self.ordinal += 1
        return record

    def _note_target(self, data: Mapping[str, JSON]) -> None:
        header = data.get("header")
        config = header.get("config") if isinstance(header, Mapping) else None
        source = config if isinstance(config, Mapping) else data
        provider, model = source.get("provider"), source.get("model")
        if isinstance(provider, str) and provider:
            self.provider = provider
        if isinstance(model, str) and model:
            self.model = model
