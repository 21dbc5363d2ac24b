"""Client cache records: what a host's own cache model credited and promised (DESIGN §4, §8).

Three sources are decoded into one :class:`CreditRecord`: membrane wire receipts, kv-unified
receipt slots (formats 1 and 2) and Cachescope's own ``cache/credit`` events. Receipts and
``cache/render-record`` events are verified against the request as sent.

Membrane's scheme, as the host documents it: the prefix hash at a marker is SHA-256 (hex) of the
key-sorted compact JSON of the list of flattened units so far (tools, system blocks, message blocks
in wire order, ``cache_control`` removed); the request hash is the same over every unit; the
estimated offset is that serialization's length in UTF-16 code units ÷ 4, rounded down.

kv-unified slots carry ``cache: {immutablePrefixHash, layout: {units, totalTokens?}, markers:
[{unitIndex, offset}]}``. Format 1 gives each layout unit its ``offset``; format 2 gap-codes them
(each unit's ``gap`` is the distance from the end of the previous unit). Leaf runs are gap-coded
pairs ``[gap, run]``: skip ``gap`` leaves, then ``run`` leaves belong to the slot.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from hashlib import sha256

from projections.cache.render.render_record import render_record
from projections.cache.render.rendered_request import RenderedRequest
from projections.normalized import JSON

MEMBRANE_SCHEME = "membrane-sha256-v1"
CACHESCOPE_SCHEME = "cachescope-blake2b-v1"


class ReceiptError(ValueError):
    """A client record that cannot be decoded, naming the field."""


@dataclass(frozen=True, slots=True)
class ReceiptMarker:
    """One marker of a wire receipt."""

    ordinal: int
    prefix_hash: str
    estimated_offset: int


@dataclass(frozen=True, slots=True)
class WireReceipt:
    """A membrane wire receipt: the hash of the request it describes and its markers."""

    request_hash: str
    markers: tuple[ReceiptMarker, ...]


@dataclass(frozen=True, slots=True)
class CreditRecord:
    """What a client's own cache model credited for one request."""

    request_ref: str
    credited_tokens: int
    marker_offsets: tuple[int, ...]
    source: str
    immutable_prefix_hash: str | None = None
    leaves: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ReceiptMismatch:
    """One place where a client's record disagrees with the request as sent."""

    place: str
    expected: str
    found: str


def _utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def membrane_prefix(rendered: RenderedRequest, through: int) -> tuple[str, int]:
    """(SHA-256 hex, estimated offset) of the units ``0..through`` under membrane's scheme."""
    data = rendered.canonical_list(through)
    return sha256(data).hexdigest(), _utf16_length(data.decode("utf-8")) // 4


def membrane_receipt(rendered: RenderedRequest) -> WireReceipt:
    """The receipt membrane would write for this request, for comparison with the one it did write."""
    request_hash, _ = membrane_prefix(rendered, len(rendered) - 1)
    markers = []
    for ordinal, marker in enumerate(rendered.markers):
        prefix_hash, offset = membrane_prefix(rendered, marker.position)
        markers.append(ReceiptMarker(ordinal, prefix_hash, offset))
    return WireReceipt(request_hash, tuple(markers))


def parse_wire_receipt(data: Mapping[str, JSON]) -> WireReceipt:
    """Decode ``{requestHash, markers: [{ordinal, prefixHash, estimatedOffset}]}``."""
    request_hash = data.get("requestHash")
    if not isinstance(request_hash, str):
        raise ReceiptError("wire receipt: field 'requestHash' is missing or not a string")
    markers = data.get("markers", [])
    if not isinstance(markers, list):
        raise ReceiptError("wire receipt: field 'markers' is not a list")
    out = []
    for i, marker in enumerate(markers):
        if not isinstance(marker, dict):
            raise ReceiptError(f"wire receipt: markers[{i}] is not an object")
        ordinal, prefix_hash, offset = (
            marker.get("ordinal"),
            marker.get("prefixHash"),
            marker.get("estimatedOffset"),
        )
        if not (isinstance(ordinal, int) and isinstance(prefix_hash, str) and isinstance(offset, int)):
            raise ReceiptError(f"wire receipt: markers[{i}] needs ordinal, prefixHash and estimatedOffset")
        out.append(ReceiptMarker(ordinal, prefix_hash, offset))
    return WireReceipt(request_hash, tuple(out))


def verify_wire_receipt(receipt: WireReceipt, rendered: RenderedRequest) -> list[ReceiptMismatch]:
    """Every disagreement between a membrane receipt and the request as sent (empty when they agree)."""
    expected = membrane_receipt(rendered)
    mismatches = []
    if receipt.request_hash != expected.request_hash:
        mismatches.append(ReceiptMismatch("request", expected.request_hash, receipt.request_hash))
    by_ordinal = {m.ordinal: m for m in expected.markers}
    for marker in receipt.markers:
        ours = by_ordinal.get(marker.ordinal)
        if ours is None:
            mismatches.append(
                ReceiptMismatch(f"marker {marker.ordinal}", "no such marker", marker.prefix_hash)
            )
        elif ours.prefix_hash != marker.prefix_hash:
            mismatches.append(
                ReceiptMismatch(f"marker {marker.ordinal}", ours.prefix_hash, marker.prefix_hash)
            )
    if len(receipt.markers) != len(expected.markers):
        mismatches.append(
            ReceiptMismatch("markers", f"{len(expected.markers)} markers", f"{len(receipt.markers)} markers")
        )
    return mismatches


def credit_from_wire_receipt(request_ref: str, receipt: WireReceipt) -> CreditRecord:
    """A receipt credits the prefix through its furthest marker, by its own estimate."""
    offsets = tuple(m.estimated_offset for m in receipt.markers)
    return CreditRecord(request_ref, max(offsets, default=0), offsets, "membrane")


def decode_kv_slot(data: Mapping[str, JSON], *, current_prefix_hash: str | None = None) -> CreditRecord:
    """Decode a kv-unified receipt slot (format 1 or 2) into a credit record.

    The credit is the furthest marker offset, or nothing when ``current_prefix_hash`` is given and
    differs from the slot's immutable prefix hash (the cached layout no longer applies).
    """
    version = data.get("format", 1)
    if version not in (1, 2):
        raise ReceiptError(f"kv-unified slot: unknown format {version!r} (expected 1 or 2)")
    request_ref = str(data.get("requestRef", ""))
    cache = data.get("cache")
    if not isinstance(cache, dict):
        raise ReceiptError("kv-unified slot: field 'cache' is missing or not an object")
    prefix_hash = cache.get("immutablePrefixHash")
    if not isinstance(prefix_hash, str):
        raise ReceiptError("kv-unified slot: field 'cache.immutablePrefixHash' is missing or not a string")
    layout = cache.get("layout")
    if not isinstance(layout, dict) or not isinstance(layout.get("units"), list):
        raise ReceiptError("kv-unified slot: field 'cache.layout.units' is missing or not a list")
    offsets = _unit_offsets(layout["units"], version)
    total = layout.get("totalTokens")
    if not isinstance(total, int):
        total = offsets[-1][1] if offsets else 0
    markers = cache.get("markers", [])
    if not isinstance(markers, list):
        raise ReceiptError("kv-unified slot: field 'cache.markers' is not a list")
    marker_offsets = []
    for i, marker in enumerate(markers):
        if not isinstance(marker, dict) or not isinstance(marker.get("unitIndex"), int):
            raise ReceiptError(f"kv-unified slot: cache.markers[{i}] needs an integer unitIndex")
        offset = marker.get("offset")
        if not isinstance(offset, int):
            index = marker["unitIndex"]
            offset = offsets[index][0] if index < len(offsets) else total
        marker_offsets.append(offset)
    leaves = _decode_runs(data.get("leafRuns", []))
    credited = max(marker_offsets, default=0)
    if current_prefix_hash is not None and current_prefix_hash != prefix_hash:
        credited = 0
    return CreditRecord(request_ref, credited, tuple(marker_offsets), "kv-unified", prefix_hash, leaves)


def _unit_offsets(units: list[JSON], version: int) -> list[tuple[int, int]]:
    """(start, end) token offsets of each layout unit."""
    out: list[tuple[int, int]] = []
    end = 0
    for i, unit in enumerate(units):
        if not isinstance(unit, dict) or not isinstance(unit.get("tokens"), int):
            raise ReceiptError(f"kv-unified slot: cache.layout.units[{i}] needs integer tokens")
        if version == 1:
            start = unit.get("offset")
            if not isinstance(start, int):
                raise ReceiptError(
                    f"kv-unified slot: cache.layout.units[{i}] needs an integer offset (format 1)"
                )
        else:
            gap = unit.get("gap", 0)
            if not isinstance(gap, int) or gap < 0:
                raise ReceiptError(
                    f"kv-unified slot: cache.layout.units[{i}].gap must be a non-negative integer"
                )
            start = end + gap
        end = start + unit["tokens"]
        out.append((start, end))
    return out


def _decode_runs(runs: JSON) -> tuple[int, ...]:
    """Leaf indexes from gap-coded runs: ``[[gap, run], ...]`` or the flat ``[gap, run, gap, run]``."""
    if not isinstance(runs, list):
        raise ReceiptError("kv-unified slot: field 'leafRuns' is not a list")
    pairs: list[JSON] = runs
    if runs and all(isinstance(x, int) for x in runs):
        if len(runs) % 2:
            raise ReceiptError("kv-unified slot: field 'leafRuns' has an odd number of entries")
        pairs = [[runs[i], runs[i + 1]] for i in range(0, len(runs), 2)]
    leaves: list[int] = []
    cursor = 0
    for i, pair in enumerate(pairs):
        if not (
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, int) and x >= 0 for x in pair)
        ):
            raise ReceiptError(
                f"kv-unified slot: leafRuns[{i}] is not a [gap, run] pair of non-negative integers"
            )
        cursor += pair[0]
        leaves.extend(range(cursor, cursor + pair[1]))
        cursor += pair[1]
    return tuple(leaves)


def credit_event_data(record: CreditRecord) -> dict[str, JSON]:
    """The data of a ``cache/credit`` event for a credit record."""
    return {
        "requestRef": record.request_ref,
        "creditedTokens": record.credited_tokens,
        "markers": [{"ordinal": i, "offset": offset} for i, offset in enumerate(record.marker_offsets)],
    }


def parse_credit_event(data: Mapping[str, JSON]) -> CreditRecord:
    """Decode the data of a ``cache/credit`` event."""
    ref, credited = data.get("requestRef"), data.get("creditedTokens")
    if not isinstance(ref, str):
        raise ReceiptError("cache/credit: field 'requestRef' is missing or not a string")
    if not isinstance(credited, int):
        raise ReceiptError("cache/credit: field 'creditedTokens' is missing or not an integer")
    markers = data.get("markers", [])
    if not isinstance(markers, list):
        raise ReceiptError("cache/credit: field 'markers' is not a list")
    offsets = []
    for i, marker in enumerate(markers):
        if not isinstance(marker, dict) or not isinstance(marker.get("offset"), int):
            raise ReceiptError(f"cache/credit: markers[{i}] needs an integer offset")
        offsets.append(marker["offset"])
    return CreditRecord(ref, credited, tuple(offsets), "cache/credit")


def render_record_event_data(request_ref: str, rendered: RenderedRequest) -> dict[str, JSON]:
    """The data of a ``cache/render-record`` event for a request, under Cachescope's hash scheme."""
    return {
        "requestRef": request_ref,
        "hashScheme": CACHESCOPE_SCHEME,
        "markers": [
            {
                "ordinal": m.ordinal,
                "identity": m.identity,
                "prefixHash": m.prefix_hash,
                "estimatedOffset": sum(rendered.chars[: m.position + 1]) // 4,
            }
            for m in render_record(rendered).markers
        ],
    }


def verify_render_record_event(data: Mapping[str, JSON], rendered: RenderedRequest) -> list[ReceiptMismatch]:
    """Compare a ``cache/render-record`` event with the prefix hashes recomputed from the request."""
    scheme = data.get("hashScheme")
    markers = data.get("markers")
    if not isinstance(markers, list):
        raise ReceiptError("cache/render-record: field 'markers' is missing or not a list")
    positions = [m.position for m in rendered.markers]
    mismatches = []
    for i, marker in enumerate(markers):
        if not isinstance(marker, dict) or not isinstance(marker.get("ordinal"), int):
            raise ReceiptError(f"cache/render-record: markers[{i}] needs an integer ordinal")
        ordinal = marker["ordinal"]
        found = str(marker.get("prefixHash"))
        if ordinal >= len(positions):
            mismatches.append(ReceiptMismatch(f"marker {ordinal}", "no such marker", found))
            continue
        if scheme == MEMBRANE_SCHEME:
            expected, _ = membrane_prefix(rendered, positions[ordinal])
        elif scheme == CACHESCOPE_SCHEME:
            expected = rendered.prefix_hashes[positions[ordinal]]
        else:
            raise ReceiptError(f"cache/render-record: unknown hashScheme {scheme!r}")
        if expected != found:
            mismatches.append(ReceiptMismatch(f"marker {ordinal}", expected, found))
    return mismatches
