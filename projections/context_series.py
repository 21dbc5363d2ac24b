"""The context of a session after every event: system prompt, tool schemas and messages, the
provider's reported prompt and the model's window, from whatever the log's format can tell.

Three sources, chosen per session by what its log holds:

- **request bodies** (claude-trace, Anthropic and OpenAI captures, connectome, ``cache/request``
  events): each request's own system, tools and messages priced from its body
  (:func:`projections.request_breakdown.body_breakdown`);
- **the log** (dsh): the ``contextBreakdown`` fold's view of the surface and the request envelope;
- **usage only** (Claude Code transcripts): the messages from the fold, and the rest of the
  provider's prompt as one inferred band, system prompt and tools together — never a system
  prompt of 0.

An importer plugs in by yielding, for each provider call, a :class:`~projections.normalized.RequestRecord`
whose ``key`` the answering event names in ``data.requestRef`` (``cache/request``) or
``data.requestId`` / ``data.messageId`` (``assistant/message``); a dsh-style call keyed
``seq-<n>`` is found by its event's seq.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

from projections.model_windows import context_window
from projections.normalized import JSON, EventRecord, Lineage, RequestRecord
from projections.request_breakdown import RequestBreakdown, body_breakdown, inferred_envelope

Basis = Literal["request body", "log", "usage"]


@dataclass(frozen=True, slots=True)
class RequestFigures:
    """What one provider call tells about its prompt."""

    model: str
    lineage: Lineage
    breakdown: RequestBreakdown | None
    """Priced from the request body; ``None`` when the source logged no body."""
    prompt_tokens: int | None
    """Provider-reported prompt: uncached input + cache read + cache writes."""
    context_window: int | None = None
    """A window the call itself showed (e.g. the 1M beta header), when known at ingest."""


@dataclass(frozen=True, slots=True)
class ContextRow:
    """The context after one event.

    ``system_tokens`` and ``tools_tokens`` are ``None`` when the format cannot tell them apart; then
    ``inferred_tokens`` holds both together, inferred from the provider's prompt.
    """

    seq: int
    type: str
    system_tokens: int | None
    tools_tokens: int | None
    message_tokens: int
    inferred_tokens: int | None
    provider_prompt_tokens: int | None
    """The prompt the provider reported for the call this event answers; ``None`` elsewhere."""
    context_window: int | None
    basis: Basis
    lineage: Lineage = "main"

    @property
    def total(self) -> int:
        """Everything stacked: system, tools, messages and the inferred band."""
        return (
            (self.system_tokens or 0)
            + (self.tools_tokens or 0)
            + self.message_tokens
            + (self.inferred_tokens or 0)
        )

    def to_json(self) -> dict[str, JSON]:
        """The row as ``manage.py breakdown --json`` prints it; unknown figures are left out."""
        row: dict[str, JSON] = {
            "seq": self.seq,
            "type": self.type,
            "systemTokens": self.system_tokens,
            "toolsTokens": self.tools_tokens,
            "messageTokens": self.message_tokens,
        }
        if self.inferred_tokens is not None:
            row["inferredSystemToolsTokens"] = self.inferred_tokens
        if self.provider_prompt_tokens is not None:
            row["providerPromptTokens"] = self.provider_prompt_tokens
        if self.context_window is not None:
            row["contextWindow"] = self.context_window
        row["basis"] = self.basis
        return row


def request_figures(record: RequestRecord) -> RequestFigures:
    """What an imported call tells about its prompt: its body priced, its usage, its model's window.

    Raises :class:`~projections.prices.PriceError` for a body of a shape no provider sends.
    """
    prompt = record.usage.prompt_total if record.usage is not None else None
    breakdown = body_breakdown(record.api, record.body) if record.body is not None else None
    found = context_window(record.model, betas=record.betas, largest_prompt=prompt)
    return RequestFigures(record.model, record.lineage, breakdown, prompt, found.tokens if found else None)


def request_ref(event: EventRecord) -> str | None:
    """The request key an event answers, or ``None`` for an event that answers no call."""
    data = event.data
    if event.type == "cache/request":
        ref = data.get("requestRef")
        return ref if isinstance(ref, str) and ref else None
    if event.type in ("assistant/message", "compaction/summary"):
        for name in ("requestId", "messageId"):
            ref = data.get(name)
            if isinstance(ref, str) and ref:
                return ref
        return f"seq-{event.seq}"
    return None


def largest_prompts(requests: Iterable[RequestFigures]) -> dict[str, int]:
    """The largest reported prompt per model: a prompt above a standard window proves a larger one."""
    largest: dict[str, int] = {}
    for figures in requests:
        if figures.prompt_tokens is not None and figures.model:
            largest[figures.model] = max(largest.get(figures.model, 0), figures.prompt_tokens)
    return largest


def request_window(figures: RequestFigures, largest: Mapping[str, int]) -> int | None:
    """The window of a call's model: the larger of what the call showed and what the table gives."""
    found = context_window(figures.model, largest_prompt=largest.get(figures.model))
    windows = [w for w in (figures.context_window, found.tokens if found else None) if w is not None]
    return max(windows) if windows else None


def context_rows(
    steps: Iterable[tuple[EventRecord, Mapping[str, JSON]]],
    requests: Mapping[str, RequestFigures],
) -> Iterator[ContextRow]:
    """One row per event, from the ``contextBreakdown`` view after it and the session's requests.

    ``steps`` pairs each event with the fold's view (``systemTokens``, ``toolsTokens`` — read as 0
    when the view has no such key — and ``messageTokens``); ``requests`` maps request keys to
    their figures.
    """
    largest = largest_prompts(requests.values())
    window: int | None = None
    stated_window = False
    measured: RequestBreakdown | None = None
    inferred: int | None = None
    log_before = 0
    for event, view in steps:
        system, tools, messages = _view_figures(view)
        window, stated_window = _window_after(event, window, stated_window)
        ref = request_ref(event)
        figures = requests.get(ref) if ref is not None else None
        prompt = None
        lineage: Lineage = "main"
        if figures is not None:
            prompt = figures.prompt_tokens
            lineage = figures.lineage
            if not stated_window:
                window = request_window(figures, largest) or window
        if figures is not None and figures.breakdown is not None:
            if lineage != "side":
                measured = figures.breakdown
            # A side call (a title, a quota probe) is shown as itself, and does not move the main chain.
            own = figures.breakdown
            yield ContextRow(
                event.seq,
                event.type,
                own.system_tokens,
                own.tools_tokens,
                own.message_tokens,
                None,
                prompt,
                window,
                "request body",
                lineage,
            )
        elif measured is not None:
            yield ContextRow(
                event.seq,
                event.type,
                measured.system_tokens,
                measured.tools_tokens,
                measured.message_tokens,
                None,
                prompt,
                window,
                "request body",
                lineage,
            )
        elif system or tools:
            yield ContextRow(
                event.seq, event.type, system, tools, messages, None, prompt, window, "log", lineage
            )
        else:
            if figures is not None and lineage != "side" and prompt is not None:
                # The call was sent before its reply joined the surface: the messages it carried are
                # the surface before this event.
                inferred = inferred_envelope(prompt, log_before)
            yield ContextRow(
                event.seq,
                event.type,
                None,
                None,
                messages,
                inferred,
                prompt,
                window,
                "usage",
                lineage,
            )
        log_before = system + tools + messages


def _view_figures(view: Mapping[str, JSON]) -> tuple[int, int, int]:
    def count(name: str) -> int:
        value = view.get(name, 0)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    return count("systemTokens"), count("toolsTokens"), count("messageTokens")


def _window_after(event: EventRecord, window: int | None, stated: bool) -> tuple[int | None, bool]:
    """A host that states its window (``request/context``) is believed over the model table."""
    if event.type != "request/context":
        return window, stated
    data = event.data
    found = data.get("contextWindow")
    if isinstance(found, int) and not isinstance(found, bool) and found > 0:
        return found, True
    model = data.get("model")
    if isinstance(model, str) and not stated:
        table = context_window(model)
        return (table.tokens if table else window), False
    return window, stated
