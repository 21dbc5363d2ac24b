"""The cache analysis on the pages: the request page's diff, the session charts and the fleet panels.

Context builders here are shared by the pages that show them; the one view re-queues a session's
analysis on demand.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.db.models import Sum
from django.db.models.functions import TruncDay
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.views.decorators.http import require_POST

from dashboard.charts import (
    CacheabilityBar,
    RequestBar,
    fleet_hit_rate_chart,
    fleet_sources_chart,
    session_cacheability_chart,
    session_requests_chart,
    warnings_by_kind_chart,
)
from dashboard.models import Block, Request, RequestAnalysis, Session, SessionAnalysis, Warning
from dashboard.roles import OPERATOR, role_required
from dashboard.services.analysis import analysis_request
from dashboard.services.costs import session_cost_compute
from projections.cache.causes import smallest_span
from projections.normalized import JSON

CONTEXT_CHARS = 300
"""Characters of unchanged text shown on each side of a change; the rest is folded."""
CHANGED_CHARS = 600
"""A changed span longer than this shows its two ends around a fold."""
FLEET_DAYS = 90
TOP_REWRITERS = 10
RECENT_MISSES = 10
WASTE_CANDIDATES = 50

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
TRANSCRIPT_UNEXPLAINED_REMEDY = (
    "The previous call's prefix should still have been cached, but a transcript does not show the "
    "bytes sent: capture the requests (claude-trace) to see which block changed; if the bytes did "
    "not change, it was eviction or routing on the provider side."
)
"""A miss in a usage-only source: the remedy cannot speak of bytes nobody logged."""


# --- the request page ----------------------------------------------------------------------------


@dataclass(frozen=True)
class UnitSide:
    """One side of the side-by-side view: where the unit sits and its text with the change marked."""

    request: Request | None
    kind: str
    chars: int
    html: SafeString | None


def request_analysis_context(call: Request) -> dict[str, Any]:
    """What the request page shows of the analysis: markers, first change, figures, label, remedy."""
    analysis = RequestAnalysis.objects.filter(request=call).first()
    job = SessionAnalysis.objects.filter(session_id=call.session_id).first()
    if analysis is None:
        return {"analysis": None, "analysis_job": job}
    data = analysis.data
    change = data.get("first_change")
    previous = _previous_request(call, data)
    sides = _change_sides(previous, call, change) if change is not None else None
    label = str(data.get("label") or "")
    # The miss label names what cost the tokens; only a changed prefix is the change's fault.
    remedy = LABEL_REMEDIES.get(label, "")
    if label == "unexplained" and not call.has_body:
        remedy = TRANSCRIPT_UNEXPLAINED_REMEDY
    if change is not None and (not label or label.startswith("prefix-changed")):
        remedy = change.get("remedy") or remedy
    return {
        "analysis": analysis,
        "analysis_job": job,
        "analysis_data": data,
        "figures": data.get("figures", {}),
        "first_change": change,
        "previous_request": previous,
        "change_sides": sides,
        "remedy": remedy,
    }


def _previous_request(call: Request, data: dict[str, JSON]) -> Request | None:
    previous = data.get("previous")
    if not isinstance(previous, dict):
        return None
    return Request.objects.filter(session_id=call.session_id, key=previous.get("key")).first()


def _change_sides(
    previous: Request | None, call: Request, change: dict[str, Any]
) -> tuple[UnitSide, UnitSide]:
    position = _content_change(previous, call, int(change["position"]))
    old_hash = _unit_hash(previous, position)
    new_hash = _unit_hash(call, position)
    blocks = Block.objects.in_bulk([h for h in (old_hash, new_hash) if h])
    old_block = blocks.get(old_hash) if old_hash else None
    new_block = blocks.get(new_hash) if new_hash else None
    old_text = display_text(json.loads(old_block.canonical)) if old_block else None
    new_text = display_text(json.loads(new_block.canonical)) if new_block else None
    span = smallest_span(old_text or "", new_text or "")
    return (
        _side(previous, old_block, old_text, span.start, span.old_end),
        _side(call, new_block, new_text, span.start, span.new_end),
    )


def _content_change(previous: Request | None, call: Request, position: int) -> int:
    """Where the content first differs, at or after the first change of the prefix.

    A re-keying parameter (images present, tool_choice, thinking) changes the prefix at the start
    of its tier while the unit there is byte-identical; the side-by-side view shows the first unit
    whose bytes did change (the stripped image, say) instead of two equal texts.
    """
    if previous is None:
        return position
    for index in range(position, min(len(previous.units), len(call.units))):
        if previous.units[index][0] != call.units[index][0]:
            return index
    return position


def _unit_hash(call: Request | None, position: int) -> str | None:
    if call is None or position >= len(call.units):
        return None
    return str(call.units[position][0])


def _side(call: Request | None, block: Block | None, text: str | None, start: int, end: int) -> UnitSide:
    return UnitSide(call, block.kind if block else "", len(text or ""), _marked(text, start, end))


def _marked(text: str | None, start: int, end: int) -> SafeString | None:
    """The text with ``text[start:end]`` in ``<mark class="change">``, folded around it; all escaped."""
    if text is None:
        return None
    before = text[max(0, start - CONTEXT_CHARS) : start]
    if start > CONTEXT_CHARS:
        before = f"… ({start - CONTEXT_CHARS:,} characters) …" + before
    changed = text[start:end]
    if len(changed) > CHANGED_CHARS:
        half = CHANGED_CHARS // 2
        changed = f"{changed[:half]} … ({len(changed) - 2 * half:,} characters) … {changed[-half:]}"
    after = text[end : end + CONTEXT_CHARS]
    if len(text) - end > CONTEXT_CHARS:
        after += f"… ({len(text) - end - CONTEXT_CHARS:,} characters) …"
    return format_html('{}<mark class="change">{}</mark>{}', before, changed, after)


def display_text(raw: JSON) -> str:
    """A unit as an engineer reads it: its text, a tool call's name and input, images as size placeholders."""
    if isinstance(raw, str):
        return raw
    if isinstance(raw, list):
        return "\n".join(display_text(part) for part in raw)
    if not isinstance(raw, dict):
        return json.dumps(raw)
    kind = raw.get("type")
    if kind in ("image", "input_image", "image_url", "document"):
        return _placeholder(raw)
    for key in ("text", "thinking"):
        if isinstance(raw.get(key), str):
            return str(raw[key])
    if kind == "tool_use":
        return f"{raw.get('name')}({json.dumps(raw.get('input'), ensure_ascii=False, sort_keys=True)})"
    if "content" in raw and kind in ("tool_result", "function_call_output", None):
        return display_text(raw["content"])
    return json.dumps(_shrunk(raw), ensure_ascii=False, sort_keys=True, indent=1)


def _placeholder(raw: dict[str, Any]) -> str:
    nested = raw.get("source")
    source: dict[str, Any] = nested if isinstance(nested, dict) else raw
    data = source.get("data") or source.get("image_url") or source.get("url") or ""
    media = source.get("media_type") or raw.get("type")
    size = f"{len(data) * 3 // 4:,} bytes" if isinstance(data, str) and len(data) > 200 else str(data)
    return f"[{media}: {size}]"


def _shrunk(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _placeholder(value) if k == "data" and isinstance(v, str) and len(v) > 200 else _shrunk(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_shrunk(v) for v in value]
    return value


# --- the session page ----------------------------------------------------------------------------


def session_analysis_context(session: Session) -> dict[str, Any]:
    """The session page's charts (requests and cacheability per turn) and its analysis job."""
    # Plain tuples, and only the cacheability part of each analysis: a 2,000-request session
    # would otherwise build 4,000 model instances and decode every analysis in full.
    rows = (
        Request.objects.filter(session=session)
        .order_by("ordinal")
        .values_list(
            "id",
            "ordinal",
            "cache_read_tokens",
            "cache_write_5m_tokens",
            "cache_write_1h_tokens",
            "uncached_input_tokens",
            "analysis__id",
            "analysis__label",
            "analysis__material",
            "analysis__predicted_read",
            "analysis__data__cacheability",
        )
    )
    bars: list[RequestBar] = []
    shares: list[CacheabilityBar] = []
    # One reverse() for the whole chart: a 2,000-request session would otherwise pay 2,000.
    url_of = reverse("dashboard:request", args=[0]).removesuffix("0/") + "{}/"
    for pk, ordinal, read, write_5m, write_1h, uncached, analysed, label, material, predicted, tiers in rows:
        url = url_of.format(pk)
        write = None if write_5m is None and write_1h is None else (write_5m or 0) + (write_1h or 0)
        bars.append(
            RequestBar(
                ordinal=ordinal,
                url=url,
                read=read,
                write=write,
                uncached=uncached,
                predicted_read=predicted if analysed else None,
                material=bool(analysed and material),
                label=(label or "") if analysed else "",
            )
        )
        if isinstance(tiers, dict):
            shares.append(
                CacheabilityBar(
                    ordinal=ordinal,
                    url=url,
                    shared={tier: int(share["shared"]) for tier, share in tiers.items()},
                    rest=sum(int(share["rest"]) for share in tiers.values()),
                )
            )
    return {
        "analysis_job": SessionAnalysis.objects.filter(session=session).first(),
        "requests_chart": session_requests_chart(bars) if bars else None,
        "cacheability_chart": session_cacheability_chart(shares) if shares else None,
        "material_misses": RequestAnalysis.objects.filter(session=session).material_misses().count(),
    }


@require_POST
@role_required(OPERATOR)
def session_analyse(request: HttpRequest, session_id: int) -> HttpResponse:
    """Queue the session's analysis again and return to its page."""
    session = get_object_or_404(Session, pk=session_id)
    if analysis_request(session_id=session.pk):
        from dashboard.tasks import analyse_session_task

        analyse_session_task.delay_on_commit(session.pk)  # type: ignore[attr-defined]
    return HttpResponseRedirect(session.get_absolute_url())


# --- the overview --------------------------------------------------------------------------------


def _fleet_days_by_source() -> list[tuple[date, str, int, float | None]]:
    """Per day and source: uncached input tokens and hit rate, aggregated in SQL."""
    rows = (
        Request.objects.filter(started_at__isnull=False)
        .annotate(day=TruncDay("started_at"))
        .values("day", "session__source__name")
        .annotate(
            read=Sum("cache_read_tokens"),
            uncached=Sum("uncached_input_tokens"),
            write_5m=Sum("cache_write_5m_tokens"),
            write_1h=Sum("cache_write_1h_tokens"),
        )
        .order_by("day", "session__source__name")
    )
    out: list[tuple[date, str, int, float | None]] = []
    for row in rows:
        prompt = sum(row[k] or 0 for k in ("read", "uncached", "write_5m", "write_1h"))
        rate = row["read"] / prompt if row["read"] is not None and prompt else None
        out.append((row["day"].date(), row["session__source__name"], row["uncached"] or 0, rate))
    cutoff = sorted({day for day, _, _, _ in out})[-FLEET_DAYS:]
    return [row for row in out if row[0] in set(cutoff)]


def top_wasted_writes() -> list[dict[str, Any]]:
    """The sessions whose cache writes were most often never read back, by wasted write cost.

    The waste of a session needs its requests in order, so it is computed for the sessions that
    wrote the most (the only ones that can waste much) and ranked among those.
    """
    candidates = Session.objects.select_related("source").order_by("-cache_write_tokens", "id")[
        :WASTE_CANDIDATES
    ]
    ranked = []
    for session in candidates:
        cost = session_cost_compute(session=session)
        if cost.wasted_write_tokens:
            ranked.append(
                {"session": session, "tokens": cost.wasted_write_tokens, "cost": cost.wasted_write_cost}
            )
    ranked.sort(key=lambda row: (-row["cost"], -row["tokens"]))
    return ranked[:TOP_REWRITERS]


def fleet_cache_context() -> dict[str, Any]:
    """Fleet hit rate per day (aggregated in SQL) and the sessions that re-wrote the most tokens."""
    days = (
        Request.objects.filter(started_at__isnull=False)
        .annotate(day=TruncDay("started_at"))
        .values("day")
        .annotate(
            read=Sum("cache_read_tokens"),
            uncached=Sum("uncached_input_tokens"),
            write_5m=Sum("cache_write_5m_tokens"),
            write_1h=Sum("cache_write_1h_tokens"),
        )
        .order_by("-day")[:FLEET_DAYS]
    )
    points = []
    for day in reversed(list(days)):
        prompt = sum(day[k] or 0 for k in ("read", "uncached", "write_5m", "write_1h"))
        rate = day["read"] / prompt if day["read"] is not None and prompt else None
        points.append((day["day"].date(), rate, prompt))
    rewriters = list(
        RequestAnalysis.objects.values("session")
        .annotate(rewritten=Sum("rewritten_tokens"))
        .filter(rewritten__gt=0)
        .order_by("-rewritten", "session")[:TOP_REWRITERS]
    )
    sessions = Session.objects.select_related("source").in_bulk([r["session"] for r in rewriters])
    by_source = _fleet_days_by_source()
    kinds = list(Warning.objects.values_list("kind").annotate(seen=Sum("count")).order_by("-seen", "kind"))
    misses = (
        RequestAnalysis.objects.filter(material=True)
        .select_related("request", "session", "session__source")
        .order_by("-request__started_at", "-id")[:RECENT_MISSES]
    )
    return {
        "fleet_hit_rate_chart": fleet_hit_rate_chart(points) if points else None,
        "fleet_sources_chart": fleet_sources_chart(by_source) if by_source else None,
        "warnings_chart": warnings_by_kind_chart(kinds) if kinds else None,
        "recent_misses": list(misses),
        "wasters": top_wasted_writes(),
        "fleet_days": points,
        "rewriters": [
            {"session": sessions[r["session"]], "rewritten": r["rewritten"]}
            for r in rewriters
            if r["session"] in sessions
        ],
    }
