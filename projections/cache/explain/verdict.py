"""A request's verdict: what the request page and ``explain`` say about one request's cache use.

The verdict is read off the request's analysis JSON (``RequestResult.data``, the shape the store
keeps), so a stored analysis and one made from a log file give the same words: the first change,
the figures side by side, the miss label and what it means, the remedy, whether the miss is
material and the self-check warnings the request showed.

The remedy rule: a miss label names what cost the tokens, and has a remedy of its own. Only a
changed prefix is the change's fault, so only then (or with no label at all) does the remedy of
the change's cause win. A miss left unexplained in a source that logged no bodies cannot blame
bytes nobody logged: its detail ranks the candidate causes and its remedy names the data that
would settle it. A prompt shorter than its model's minimum cacheable length is never cached,
wherever its markers sit, so no remedy is offered for it: :func:`below_minimum_note` says so instead.

The label rule: each label means one thing, said once in :data:`LABEL_MEANINGS` (the README's
sentences), and the badge a request shows is decided by :func:`badge_for` alone, so the request
page, ``explain``, the warnings and the charts never disagree. A request that read nothing and
wrote its prompt is a cold write, never "no miss".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from projections.cache.explain.causes import REMEDIES
from projections.cache.explain.figures import Figures
from projections.cache.explain.miss_candidates import SETTLE_WITH
from projections.cache.predict.compaction import COMPACTED, COMPACTION_REWRITE
from projections.cache.predict.idle_gap import UNKNOWN_GAP_REMEDY, ttl_remedy
from projections.normalized import JSON
from projections.providers.diagnosis import ProviderDiagnosis, diagnosis_from_json

LABEL_REMEDIES = {
    "no-breakpoint": "Put a cache_control marker on the last block that stays the same between requests.",
    "below-minimum": (
        "The prefix is shorter than the model's minimum cacheable length, so nothing is written: this "
        "is expected for small side calls; for the main chain, cache a longer stable prefix."
    ),
    # The remedy of a request states its idle gap and offers the 1-hour TTL only under an hour
    # (:func:`projections.cache.predict.idle_gap.ttl_remedy`); this is the sentence for an unknown gap.
    "ttl-expired": UNKNOWN_GAP_REMEDY,
    "beyond-lookback": (
        "The previous entry lies more than 20 blocks before every breakpoint: add a breakpoint nearer "
        "the end of what the previous request cached."
    ),
    "no-write-at-reusable-position": (
        "The last marker sits on a block that changes every request: move it to the last stable block."
    ),
    "concurrent": (
        "Requests sent in parallel all write: send the first one alone and start the rest once it has "
        "begun answering."
    ),
    "partial-hit": "Only an older entry was readable: check which breakpoint the previous request wrote.",
    "unexplained": (
        "The bytes allow more than the provider read and the entry should still have been alive: what "
        "remains is eviction or routing on the provider's side; watch whether it repeats, and turn on "
        "the provider's cache diagnostics to see its own reason."
    ),
    "model-changed": (
        "Each model keeps its own cache; keep one model per lineage, or send side calls to another "
        "model from a separate lineage."
    ),
    COMPACTED: REMEDIES["compacted"],
    COMPACTION_REWRITE: REMEDIES["compaction"],
}
"""What to do about a miss, by its label."""

TRANSCRIPT_UNEXPLAINED_REMEDY = "To settle it, " + SETTLE_WITH + "."
"""A miss in a usage-only source: the remedy cannot speak of bytes nobody logged, so it names the
data that would settle the cause."""

LABEL_MEANINGS = {
    "no-breakpoint": "The request carries no cache_control marker, so nothing of it was cached or read.",
    "below-minimum": (
        "The prefix through the last marker is shorter than the model's minimum cacheable length, so "
        "nothing was written."
    ),
    "model-changed": (
        "The model differs from the previous request's and each model keeps its own cache, so nothing "
        "the previous request cached could be read."
    ),
    "prefix-changed": (
        "The prompt differs from the previous request's at the tier and position the label names "
        "(after a compaction or a system prompt rewrite in a transcript), so everything after that "
        "point was processed again."
    ),
    "no-write-at-reusable-position": (
        "The last marker sits on a block that changed, so the stable blocks before it were never "
        "written and could not be read."
    ),
    "ttl-expired": (
        "The entry this request would have read expired (5 minutes or 1 hour after its last use) "
        "before the request was sent."
    ),
    "concurrent": (
        "The entry this request would have read was still being written by a request sent in "
        "parallel, so both wrote it."
    ),
    "beyond-lookback": (
        "The entry that was written lies more than 20 blocks before every marker of this request, "
        "beyond where the provider looks for it."
    ),
    "partial-hit": "Only an older, shorter entry was read, not the longest one the previous request wrote.",
    "unexplained": (
        "The request read less than its prefix allowed and nothing in the data explains why: with the "
        "bytes logged and unchanged that leaves the provider (eviction or routing); without them the "
        "verdict ranks the candidate causes and names the data that would settle it."
    ),
    COMPACTED: (
        "A compaction replaced the conversation's history with its summary, so only the tools and "
        "system prompt could be read and the summary was written: what compacting costs, by design."
    ),
    COMPACTION_REWRITE: (
        "The compaction's summarising call re-sent the conversation but read less of it than the main "
        "thread had cached (its system prompt or tools differ from the main thread's), so the history "
        "was processed again."
    ),
}
"""What each label means, one sentence each (a ``prefix-changed@tier:position`` label is
``prefix-changed``)."""

BADGE_MEANINGS = {
    "no miss": "The request read what was predicted for it.",
    "cold write": (
        "Nothing was read and the prompt was written: a cold start, not a hit (the first request of "
        "its lineage, or one no earlier entry could serve)."
    ),
    "not cached": "Nothing was read or written.",
    "not predicted": (
        "Nothing is known of what was cached before this request (the first call of a transcript "
        "lineage, or one whose previous call did not report its cache read or write), so no miss "
        "can be judged."
    ),
    "read not reported": (
        "The provider reported no cache read for this request, so whether it missed cannot be judged."
    ),
}
"""What the badge of a request without a miss label says."""

_FIGURES = ("credited", "wire_allows", "reported_read", "reported_write", "predicted_read", "predicted_write")


class VerdictError(ValueError):
    """An analysis JSON that lacks what a verdict is read from."""


@dataclass(frozen=True, slots=True)
class ChangeVerdict:
    """The first change of the prefix: where it is, its cause and what the cause means."""

    position: int
    tier: str
    cause: str
    detail: str
    remedy: str


@dataclass(frozen=True, slots=True)
class WarningNote:
    """A self-check warning the request showed."""

    kind: str
    message: str


@dataclass(frozen=True, slots=True)
class Verdict:
    """What is said of one request: first change, figures, label and its detail, remedy, materiality
    and warnings."""

    first_change: ChangeVerdict | None
    figures: Figures
    label: str | None
    """The miss label; ``None`` when the request did not miss."""
    detail: str
    """What the label means for this request (the predictor's own words)."""
    remedy: str
    """What to do about it; empty when there is nothing to do."""
    material: bool
    """Whether the miss re-processed enough of the prompt to matter."""
    badge: str
    """What the request's badge says (:func:`badge_for`): the label, or what the figures show."""
    meaning: str
    """The one sentence that says what the label (or the badge) means."""
    warnings: tuple[WarningNote, ...]
    provider_diagnosis: ProviderDiagnosis | None = None
    """The provider's own reason for the miss, when its response stated one: the cross-check of
    ``first_change`` (a ``provider-disagrees`` warning says when the two cannot both be right)."""
    client_version: str = ""
    """The client release that sent the request; empty when the source does not say."""

    def to_json(self) -> dict[str, JSON]:
        """The verdict as plain JSON."""
        change = self.first_change
        return {
            "first_change": None
            if change is None
            else {
                "position": change.position,
                "tier": change.tier,
                "cause": change.cause,
                "detail": change.detail,
                "remedy": change.remedy,
            },
            "figures": {name: getattr(self.figures, name) for name in _FIGURES},
            "label": self.label,
            "detail": self.detail,
            "remedy": self.remedy,
            "material": self.material,
            "badge": self.badge,
            "meaning": self.meaning,
            "warnings": [{"kind": w.kind, "message": w.message} for w in self.warnings],
            "provider_diagnosis": None
            if self.provider_diagnosis is None
            else {
                "reason": self.provider_diagnosis.reason,
                "missed_tokens": self.provider_diagnosis.missed_tokens,
            },
            "client_version": self.client_version or None,
        }


def label_meaning(label: str | None) -> str:
    """The one sentence that says what ``label`` means; empty for no label or an unknown one."""
    return LABEL_MEANINGS.get((label or "").split("@", 1)[0], "")


def badge_for(label: str | None, figures: Figures) -> str:
    """The badge of a request: its miss label, else what its figures show (:data:`BADGE_MEANINGS`).

    "no miss" only where something was predicted and read: a request that read nothing and wrote
    its prompt is a cold write. An unknown figure is never taken for 0: without a reported read
    nothing about the read is claimed, and "not cached" needs a reported write of 0 as well.
    """
    if label:
        return label
    read, write = figures.reported_read, figures.reported_write
    if read is None:
        return "read not reported"
    if read == 0 and write is not None and write > 0:
        return "cold write"
    if read == 0 and write == 0:
        return "not cached"
    if figures.predicted_read is None:
        return "not predicted"
    return "no miss"


def below_minimum_note(prompt_tokens: int, minimum_tokens: int) -> str:
    """What is said instead of a remedy for a prompt shorter than its model's minimum cacheable length."""
    return (
        f"The prompt is {prompt_tokens:,} tokens, below the model's minimum cacheable length of "
        f"{minimum_tokens:,} tokens: the provider caches no prompt this short, so no cache_control "
        "marker can help; nothing to change."
    )


def remedy_for(
    label: str | None,
    change: ChangeVerdict | None,
    *,
    has_body: bool,
    prompt_tokens: int | None = None,
    minimum_tokens: int | None = None,
    idle_seconds: float | None = None,
) -> str:
    """The remedy of a request's miss (see the module's docstring for the rule); empty for none.

    ``prompt_tokens`` and ``minimum_tokens``: the request's prompt and its model's minimum cacheable
    prefix, where known; a prompt below the minimum gets :func:`below_minimum_note` for a remedy.
    ``idle_seconds``: for a TTL miss, how long its entry went unused; the remedy states it, and
    offers the 1-hour TTL only when that would have kept the entry (:func:`ttl_remedy`).
    """
    remedy = LABEL_REMEDIES.get(label or "", "")
    if label == "ttl-expired":
        remedy = ttl_remedy(idle_seconds)
    if label == "unexplained" and not has_body:
        remedy = TRANSCRIPT_UNEXPLAINED_REMEDY
    if change is not None and (not label or label.startswith("prefix-changed")):
        remedy = change.remedy or remedy
    if remedy and prompt_tokens is not None and minimum_tokens is not None and prompt_tokens < minimum_tokens:
        return below_minimum_note(prompt_tokens, minimum_tokens)
    return remedy


def verdict(data: Mapping[str, JSON], *, has_body: bool) -> Verdict:
    """The verdict on one request from its analysis JSON; ``has_body``: whether its body was logged.

    Raises :class:`VerdictError` naming the missing field when ``data`` is not an analysis.
    """
    figures = data.get("figures")
    if not isinstance(figures, Mapping):
        raise VerdictError("request analysis: field 'figures' is missing")
    change = _change(data.get("first_change"))
    label = data.get("label") or None
    said = Figures(**{name: figures.get(name) for name in _FIGURES})
    badge = badge_for(label, said)
    return Verdict(
        first_change=change,
        figures=said,
        label=label,
        detail=str(data.get("label_detail") or ""),
        remedy=remedy_for(
            label,
            change,
            has_body=has_body,
            prompt_tokens=_count(data.get("prompt_tokens")),
            # Absent from an analysis stored before it was kept: its remedy is the label's own.
            minimum_tokens=_count(data.get("minimum_tokens")),
            idle_seconds=_seconds(data.get("idle_seconds")),
        ),
        material=bool(data.get("material")),
        badge=badge,
        meaning=label_meaning(label) if label else BADGE_MEANINGS[badge],
        # An analysis stored before warnings were kept per request has none to show.
        warnings=tuple(WarningNote(str(w["kind"]), str(w["message"])) for w in data.get("warnings") or ()),
        # Both are absent from an analysis stored before they were kept.
        provider_diagnosis=diagnosis_from_json(data.get("provider_diagnosis")),
        client_version=str(data.get("client_version") or ""),
    )


def _change(change: JSON) -> ChangeVerdict | None:
    if change is None:
        return None
    if not isinstance(change, Mapping):
        raise VerdictError("request analysis: field 'first_change' is not an object")
    missing = [name for name in ("position", "tier", "cause") if name not in change]
    if missing:
        raise VerdictError(f"request analysis: field 'first_change.{missing[0]}' is missing")
    return ChangeVerdict(
        position=int(change["position"]),
        tier=str(change["tier"]),
        cause=str(change["cause"]),
        detail=str(change.get("detail") or ""),
        remedy=str(change.get("remedy") or ""),
    )


def _count(value: JSON) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _seconds(value: JSON) -> float | None:
    # Absent from an analysis stored before the gap was kept: its remedy is the unknown gap's.
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
