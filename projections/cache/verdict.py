"""A request's verdict: what the request page and ``explain`` say about one request's cache use.

The verdict is read off the request's analysis JSON (``RequestResult.data``, the shape the store
keeps), so a stored analysis and one made from a log file give the same words: the first change,
the figures side by side, the miss label and what it means, the remedy, whether the miss is
material and the self-check warnings the request showed.

The remedy rule: a miss label names what cost the tokens, and has a remedy of its own. Only a
changed prefix is the change's fault, so only then (or with no label at all) does the remedy of
the change's cause win. A miss left unexplained in a source that logged no bodies cannot blame
bytes nobody logged: its remedy asks for the bytes instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from projections.cache.analysis import Figures
from projections.normalized import JSON
from projections.provider_diagnosis import ProviderDiagnosis, diagnosis_from_json

LABEL_REMEDIES = {
    "no-breakpoint": "Put a cache_control marker on the last block that stays the same between requests.",
    "below-minimum": (
        "The prefix is shorter than the model's minimum cacheable length, so nothing is written: this "
        "is expected for small side calls; for the main chain, cache a longer stable prefix."
    ),
    "ttl-expired": (
        "The 5-minute entry expired between turns: use ttl 1h on the stable prefix (writes cost 2x base "
        "instead of 1.25x, reads stay at 0.1x) when turns are minutes apart."
    ),
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
        "The bytes allow more than the provider read: likely eviction or routing on the provider side; "
        "watch whether it repeats."
    ),
    "model-changed": (
        "Each model keeps its own cache; keep one model per lineage, or send side calls to another "
        "model from a separate lineage."
    ),
}
"""What to do about a miss, by its label."""

TRANSCRIPT_UNEXPLAINED_REMEDY = (
    "The previous call's prefix should still have been cached, but a transcript does not show the "
    "bytes sent: capture the requests (claude-trace) to see which block changed; if the bytes did "
    "not change, it was eviction or routing on the provider side."
)
"""A miss in a usage-only source: the remedy cannot speak of bytes nobody logged."""

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
            "warnings": [{"kind": w.kind, "message": w.message} for w in self.warnings],
            "provider_diagnosis": None
            if self.provider_diagnosis is None
            else {
                "reason": self.provider_diagnosis.reason,
                "missed_tokens": self.provider_diagnosis.missed_tokens,
            },
            "client_version": self.client_version or None,
        }


def remedy_for(label: str | None, change: ChangeVerdict | None, *, has_body: bool) -> str:
    """The remedy of a request's miss (see the module's docstring for the rule); empty for none."""
    remedy = LABEL_REMEDIES.get(label or "", "")
    if label == "unexplained" and not has_body:
        remedy = TRANSCRIPT_UNEXPLAINED_REMEDY
    if change is not None and (not label or label.startswith("prefix-changed")):
        remedy = change.remedy or remedy
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
    return Verdict(
        first_change=change,
        figures=Figures(**{name: figures.get(name) for name in _FIGURES}),
        label=label,
        detail=str(data.get("label_detail") or ""),
        remedy=remedy_for(label, change, has_body=has_body),
        material=bool(data.get("material")),
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
