"""Context breakdowns beside the prompt the provider counted: request-body estimates calibrated to
it, and a folded log's own figures checked against it.

A request body's bands (:func:`projections.request_breakdown.body_breakdown`) are the harness
meter's 4-characters-per-token heuristic: on recorded claude-trace traffic they add up to 2.3 to
3.0 % less than the provider's count on Sonnet 4's main calls (a 15,036-token prompt priced at
14,683) and 9 to 25 % more on Haiku 3.5's short side calls. The provider's count is the authority
on the size, the heuristic only on the split, so where the provider reported a prompt the bands are
scaled to it, the difference spread in proportion to each band, and the raw estimate is kept
beside them. A request with a body but no count (a response cut off before its usage) takes the
ratio of counted to estimated tokens of the other requests of its model in the session: the
tokenizer is the model's, so the model's own calls are the best guide.

A folded harness log (``contextBreakdown``) is the harness's own meter and keeps its figures. Where
they fall far short of the provider's count (the harness's test snapshots replace the system
prompt and tool schemas by ``{{system}}`` and ``{{tools}}``), :func:`context_shortfall` says how
far, so the page flags the gap instead of presenting the estimate as the context.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, Protocol

from projections.request_breakdown import RequestBreakdown

Calibration = Literal["provider count", "session factor"]
"""How a request's bands were brought to size: to its own reported prompt, or by the ratio of
reported to estimated tokens of its model's other requests in the session."""

FAR_SHORT_SHARE = 0.2
FAR_SHORT_TOKENS = 1_000
"""A folded log's figures fall far short of the provider's count when they miss more than this
share of it and at least this many tokens: below either the gap is the heuristic's own error on
the messages (a few per cent) or too small to mislead."""


@dataclass(frozen=True, slots=True)
class CalibratedBreakdown:
    """A request's bands as shown, the raw heuristic estimate they came from, and how they were sized."""

    bands: RequestBreakdown
    raw: RequestBreakdown
    calibration: Calibration | None
    """``None`` where nothing could size them: the raw estimate is shown as it is."""


class CountedRequest(Protocol):
    """One request as calibration reads it: its model, its raw bands (``None`` without a body) and
    the prompt the provider reported (``None`` when it reported none)."""

    @property
    def model(self) -> str: ...

    @property
    def breakdown(self) -> RequestBreakdown | None: ...

    @property
    def prompt_tokens(self) -> int | None: ...


def scaled_breakdown(raw: RequestBreakdown, target: int) -> RequestBreakdown:
    """``raw``'s bands scaled so they sum to ``target`` exactly, each in proportion to its size.

    Whole tokens by largest remainder: each band gets the floor of its share and the tokens left go
    to the largest fractions (ties to the earlier band: system, tools, messages), so no band moves
    by a token more than its share and the sum is the target. A raw estimate of 0 has no proportion
    to spread and is returned as it is.
    """
    bands = (raw.system_tokens, raw.tools_tokens, raw.message_tokens)
    total = sum(bands)
    if total <= 0 or target < 0:
        return raw
    floors = [band * target // total for band in bands]
    remainders = [band * target - floor * total for band, floor in zip(bands, floors, strict=True)]
    left = target - sum(floors)
    for index in sorted(range(3), key=lambda i: -remainders[i])[:left]:
        floors[index] += 1
    return RequestBreakdown(*floors)


class SessionCalibration:
    """Calibrates the request-body breakdowns of one session, per model."""

    def __init__(self, requests: Iterable[CountedRequest]) -> None:
        counted: dict[str, int] = {}
        estimated: dict[str, int] = {}
        for request in requests:
            raw = request.breakdown
            if raw is None or request.prompt_tokens is None or raw.total <= 0:
                continue
            counted[request.model] = counted.get(request.model, 0) + request.prompt_tokens
            estimated[request.model] = estimated.get(request.model, 0) + raw.total
        self.factors = {model: counted[model] / estimated[model] for model in counted}
        """Reported ÷ estimated tokens per model, over the session's requests that have both."""

    def calibrate(self, request: CountedRequest) -> CalibratedBreakdown | None:
        """The request's bands sized to its reported prompt, else by its model's factor in the
        session, else raw; ``None`` for a request without a body."""
        raw = request.breakdown
        if raw is None:
            return None
        if request.prompt_tokens is not None and raw.total > 0:
            return CalibratedBreakdown(scaled_breakdown(raw, request.prompt_tokens), raw, "provider count")
        factor = self.factors.get(request.model)
        if factor is not None and raw.total > 0:
            sized = scaled_breakdown(raw, round(raw.total * factor))
            return CalibratedBreakdown(sized, raw, "session factor")
        return CalibratedBreakdown(raw, raw, None)


@dataclass(frozen=True, slots=True)
class ContextShortfall:
    """How far a folded log's own figures fall short of the prompt the provider counted."""

    estimate: int
    reported: int

    @property
    def missing(self) -> int:
        """Tokens the provider counted that the log's figures do not account for."""
        return self.reported - self.estimate

    @property
    def share(self) -> float:
        """That gap as a share of the provider's count."""
        return self.missing / self.reported


def context_shortfall(estimate: int, reported: int | None) -> ContextShortfall | None:
    """The gap when a log's figures fall far short of the provider's count (both
    :data:`FAR_SHORT_SHARE` and :data:`FAR_SHORT_TOKENS`), else ``None``."""
    if reported is None or reported <= 0:
        return None
    gap = ContextShortfall(estimate, reported)
    return gap if gap.share > FAR_SHORT_SHARE and gap.missing >= FAR_SHORT_TOKENS else None
