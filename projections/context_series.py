"""The context of a session after every event: system prompt, tool schemas and messages, the
provider's reported prompt and the model's window, from whatever the log's format can tell.

Three sources, chosen per session by what its log holds:

- **request bodies** (claude-trace, Anthropic and OpenAI captures, connectome, ``cache/request``
  events): each request's own system, tools and messages priced from its body
  (:func:`projections.request_breakdown.body_breakdown`) and calibrated to the prompt the provider
  counted (:mod:`projections.breakdown_calibration`), the raw estimate kept beside them;
- **the log** (dsh): the ``contextBreakdown`` fold's view of the surface and the request envelope;
- **usage only** (Claude Code transcripts): the messages from the fold, and the rest of the
  provider's prompt as one inferred band, system prompt and tools together — never a system
  prompt of 0.

An importer plugs in by yielding each provider call's :class:`~projections.normalized.RequestRecord`
directly after the event that answers it (a ``cache/request``, an ``assistant/message``, a
``compaction/summary``): :func:`answering_seq` ties the two, at ingest and in the breakdown command.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

from projections.breakdown_calibration import CalibratedBreakdown, Calibration, SessionCalibration
from projections.cache.predict.lineage import is_side_call
from projections.normalized import JSON, EventRecord, RequestRecord
from projections.providers.model_windows import context_window
from projections.request_breakdown import RequestBreakdown, body_breakdown, inferred_envelope

Basis = Literal["request body", "log", "usage"]


@dataclass(frozen=True, slots=True)
class RequestFigures:
    """What one provider call tells about its prompt."""

    model: str
    lineage: str
    """The importer's role (``main``, ``side``, ``subagent``) or, once analysed, the analysis's
    lineage (``side-2``, ...); :func:`~projections.cache.predict.lineage.is_side_call` reads either."""
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
    lineage: str = "main"
    raw: RequestBreakdown | None = None
    """The request body's raw estimate, where the bands shown were calibrated from it."""
    calibration: Calibration | None = None
    """How the bands shown were sized (``provider count``, ``session factor``); ``None`` when they
    are the source's own figures."""

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
        if self.raw is not None and self.calibration is not None:
            row["calibration"] = self.calibration
            row["rawEstimate"] = {
                "systemTokens": self.raw.system_tokens,
                "toolsTokens": self.raw.tools_tokens,
                "messageTokens": self.raw.message_tokens,
            }
        row["basis"] = self.basis
        return row


def request_figures(record: RequestRecord, *, host: str | None = None) -> RequestFigures:
    """What an imported call tells about its prompt: its body priced, its usage, its model's window.

    Raises :class:`~projections.prices.PriceError` for a body of a shape no provider sends.
    """
    prompt = record.usage.prompt_total if record.usage is not None else None
    breakdown = body_breakdown(record.api, record.body) if record.body is not None else None
    found = context_window(record.model, betas=record.betas, largest_prompt=prompt, host=host)
    return RequestFigures(record.model, record.lineage, breakdown, prompt, found.tokens if found else None)


def answering_seq(previous: EventRecord | None) -> int | None:
    """The seq of the event a request record answers: the event its importer yielded just before it."""
    return None if previous is None else previous.seq


ANSWERING_TYPES = ("cache/request", "assistant/message", "compaction/summary")
"""The event types that answer a provider call."""


def answered_keys(seq: int, event_type: str, data: Mapping[str, JSON]) -> tuple[str, ...]:
    """The request keys an answering event can stand for, as the importers key their calls.

    For requests stored before their answering seq was kept: a capture's ``cache/request`` names its
    call in ``requestRef``; a Claude Code reply in ``requestId`` (or ``messageId`` without one); a dsh
    reply or summary is keyed ``seq-<n>``.
    """
    if event_type == "cache/request":
        ref = data.get("requestRef")
        return (ref,) if isinstance(ref, str) and ref else ()
    if event_type not in ANSWERING_TYPES:
        return ()
    named = next(
        (data[k] for k in ("requestId", "messageId") if isinstance(data.get(k), str) and data[k]), None
    )
    return (named, f"seq-{seq}") if named else (f"seq-{seq}",)


def largest_prompts(requests: Iterable[RequestFigures]) -> dict[str, int]:
    """The largest reported prompt per model: a prompt above a standard window proves a larger one."""
    largest: dict[str, int] = {}
    for figures in requests:
        if figures.prompt_tokens is not None and figures.model:
            largest[figures.model] = max(largest.get(figures.model, 0), figures.prompt_tokens)
    return largest


def request_window(
    figures: RequestFigures, largest: Mapping[str, int], host: str | None = None
) -> int | None:
    """The window of a call's model: the larger of what the call showed and what the table gives."""
    found = context_window(figures.model, largest_prompt=largest.get(figures.model), host=host)
    windows = [w for w in (figures.context_window, found.tokens if found else None) if w is not None]
    return max(windows) if windows else None


@dataclass(frozen=True, slots=True)
class _Step:
    """One event's figures before the session's basis is known."""

    seq: int
    type: str
    system: int
    tools: int
    messages: int
    prompt: int | None
    window: int | None
    lineage: str
    own: CalibratedBreakdown | None
    """The figures of the call this event answers, priced from its body and calibrated."""


def context_rows(
    steps: Iterable[tuple[EventRecord, Mapping[str, JSON]]],
    requests: Mapping[int, RequestFigures],
    *,
    host: str | None = None,
) -> Iterator[ContextRow]:
    """One row per event, from the ``contextBreakdown`` view after it and the session's requests.

    ``steps`` pairs each event with the fold's view (``systemTokens``, ``toolsTokens`` — read as 0
    when the view has no such key — and ``messageTokens``); ``requests`` maps the seq of each
    call's answering event to the call's figures; ``host`` names the agent that wrote the log, for
    the windows it runs models with (:func:`projections.providers.model_windows.host_of_format`).

    The basis is one per session: request bodies when any call has one; otherwise the log, when the
    log prices a system prompt or tools by the first main call; otherwise usage. Rows before the
    first call wait for that decision (a log with no call at all is read as the log).
    """
    largest = largest_prompts(requests.values())
    sizes = SessionCalibration(requests.values())
    basis: Basis | None = "request body" if any(f.breakdown is not None for f in requests.values()) else None
    held: list[_Step] = []
    rows = _Rows()
    window: int | None = None
    stated_window = False
    pairs = iter(steps)
    while True:
        try:
            event, view = next(pairs)
        except StopIteration:
            break
        except Exception:
            # A fold that stops still shows every row before the event it stopped at.
            for earlier in held:
                yield rows.row(earlier, basis or "log")
            raise
        system, tools, messages = _view_figures(view)
        window, stated_window = _window_after(event, window, stated_window)
        figures = requests.get(event.seq)
        step = _Step(event.seq, event.type, system, tools, messages, None, window, "main", None)
        if figures is not None:
            if not stated_window:
                window = request_window(figures, largest, host) or window
            step = _Step(
                event.seq,
                event.type,
                system,
                tools,
                messages,
                figures.prompt_tokens,
                window,
                figures.lineage,
                sizes.calibrate(figures),
            )
            if basis is None and not is_side_call(figures.lineage):
                basis = "log" if system or tools else "usage"
        if basis is None:
            held.append(step)
            continue
        for earlier in held:
            yield rows.row(earlier, basis)
        held.clear()
        yield rows.row(step, basis)
    for earlier in held:
        yield rows.row(earlier, "log")


class _Rows:
    """Turns steps into rows under a basis, carrying what later rows repeat."""

    def __init__(self) -> None:
        nothing = RequestBreakdown(0, 0, 0)
        self.measured = CalibratedBreakdown(nothing, nothing, None)
        """The newest main call's body figures, which hold until the next call."""
        self.inferred: int | None = None
        self.log_before = 0
        """What the log priced before the current event: the messages a call carried."""

    def row(self, step: _Step, basis: Basis) -> ContextRow:
        log_before, self.log_before = self.log_before, step.system + step.tools + step.messages
        common = (step.prompt, step.window, basis, step.lineage)
        if basis == "request body":
            if step.own is not None and not is_side_call(step.lineage):
                self.measured = step.own
            # A side call (a title, a quota probe) is shown as itself and does not move the main chain.
            shown = step.own or self.measured
            bands = shown.bands
            return ContextRow(
                step.seq,
                step.type,
                bands.system_tokens,
                bands.tools_tokens,
                bands.message_tokens,
                None,
                *common,
                raw=shown.raw if shown.calibration is not None else None,
                calibration=shown.calibration,
            )
        if basis == "log":
            return ContextRow(step.seq, step.type, step.system, step.tools, step.messages, None, *common)
        if step.prompt is not None and not is_side_call(step.lineage):
            # The call was sent before its reply joined the surface: it carried the log as it stood before.
            self.inferred = inferred_envelope(step.prompt, log_before)
        return ContextRow(step.seq, step.type, None, None, step.messages, self.inferred, *common)


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
