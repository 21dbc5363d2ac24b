"""Self-check warnings: where the host, the wire and the provider disagree (DESIGN §6.3).

Each check returns a value or nothing; :func:`dedupe` groups them by kind and place with a count,
so a cause that repeats on every request is shown once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from projections.cache.explain.miss_candidates import Candidate
from projections.cache.predict.client_records import ReceiptMismatch
from projections.cache.predict.materiality import is_material
from projections.providers.diagnosis import ProviderDiagnosis, disagreement

WarningKind = Literal[
    "render-mismatch", "over-credit", "unexplained-miss", "model-error", "marker-limit", "provider-disagrees"
]

MAX_MARKERS = 4
MODEL_ERROR_SLACK = 64
"""Tokens a reported read may exceed the byte-level bound by before it counts as our error: token
estimates inside a prefix are calibrated, not counted, and can be off by a few tokens."""


@dataclass(frozen=True, slots=True)
class CacheWarning:
    """One disagreement, at a place (a marker identity, a lineage) and for one request."""

    kind: WarningKind
    place: str
    message: str
    request: str


@dataclass(frozen=True, slots=True)
class GroupedWarning:
    """Warnings of one kind at one place, with how many requests showed it."""

    kind: WarningKind
    place: str
    message: str
    count: int
    first_request: str
    last_request: str


def render_mismatch(request: str, place: str, mismatches: Sequence[ReceiptMismatch]) -> CacheWarning | None:
    """A client's record disagrees with the prefix hashes recomputed from the request as sent."""
    if not mismatches:
        return None
    first = mismatches[0]
    message = (
        f"{len(mismatches)} mismatch(es); {first.place}: "
        f"expected {first.expected[:16]}, found {first.found[:16]}"
    )
    return CacheWarning("render-mismatch", place, message, request)


def over_credit(request: str, place: str, credited: int | None, wire_allows: int) -> CacheWarning | None:
    """The client credits more cached tokens than the bytes on the wire let the provider serve."""
    if credited is None or credited <= wire_allows:
        return None
    return CacheWarning(
        "over-credit",
        place,
        f"credited {credited} tokens, the wire allows {wire_allows}: "
        "a cached prefix changed under the client",
        request,
    )


def unexplained_miss(
    request: str, place: str, reported: int | None, predicted: int, prompt_total: int, identical_in_ttl: bool
) -> CacheWarning | None:
    """Reported read below predicted by > 5 % and >= 2,000 tokens with an identical prefix inside the TTL."""
    if reported is None or not identical_in_ttl or not is_material(predicted - reported, prompt_total):
        return None
    return CacheWarning(
        "unexplained-miss",
        place,
        f"reported read {reported}, predicted {predicted} with an identical prefix inside the TTL "
        "(server-side eviction or routing)",
        request,
    )


def unattributed_miss(
    request: str, place: str, reported: int, carried: int, likeliest: Candidate
) -> CacheWarning:
    """A material miss in a usage-only log: the previous call's prefix was not read back, and the
    log cannot say whether the bytes changed or the provider evicted them (see
    :mod:`projections.cache.explain.miss_candidates`)."""
    return CacheWarning(
        "unexplained-miss",
        place,
        f"reported read {reported}, the previous call left {carried} cached; without the request "
        f"bytes the cause is not known (likeliest: {likeliest.cause})",
        request,
    )


def model_error(
    request: str, place: str, reported: int | None, allowed: int, *, form_switch: str | None = None
) -> CacheWarning | None:
    """The provider read more than the bytes allow: the cache model is wrong here.

    ``form_switch`` names the first change when it is only a string ↔ one-text-block switch, which
    may or may not break the cache (:func:`~projections.cache.explain.content_forms.string_block_switch`):
    a read past it is the evidence that it did not, and the message says so.
    """
    if reported is None or reported <= allowed + MODEL_ERROR_SLACK:
        return None
    message = f"reported read {reported} exceeds the {allowed} tokens the bytes allow"
    if form_switch is not None:
        message += (
            f": the provider read past the string ↔ one-text-block switch at {form_switch}, so here "
            "the switch did not break the cache"
        )
    return CacheWarning("model-error", place, message, request)


def marker_limit(request: str, place: str, markers: int) -> CacheWarning | None:
    """More breakpoints than the provider accepts."""
    if markers <= MAX_MARKERS:
        return None
    return CacheWarning(
        "marker-limit", place, f"{markers} cache breakpoints, the provider accepts {MAX_MARKERS}", request
    )


def provider_disagrees(
    request: str, place: str, diagnosis: ProviderDiagnosis | None, first_change_tier: str | None
) -> CacheWarning | None:
    """The provider's own cache diagnosis names another tier than the bytes' first change (or a
    change where the bytes show none): one of the two is wrong. See
    :func:`projections.providers.diagnosis.disagreement` for what counts."""
    why = disagreement(diagnosis, first_change_tier)
    if why is None:
        return None
    return CacheWarning("provider-disagrees", place, why, request)


def dedupe(warnings: Iterable[CacheWarning | None]) -> list[GroupedWarning]:
    """Group warnings by kind and place, in order of first appearance, with a count each."""
    groups: dict[tuple[str, str], GroupedWarning] = {}
    for warning in warnings:
        if warning is None:
            continue
        key = (warning.kind, warning.place)
        seen = groups.get(key)
        if seen is None:
            groups[key] = GroupedWarning(
                warning.kind, warning.place, warning.message, 1, warning.request, warning.request
            )
        else:
            groups[key] = GroupedWarning(
                seen.kind, seen.place, seen.message, seen.count + 1, seen.first_request, warning.request
            )
    return list(groups.values())
