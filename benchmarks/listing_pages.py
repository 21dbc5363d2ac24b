"""Which pages the page benchmark (``benchmarks/listing.py``) times, and the URLs that reach them.

Every page of the dashboard a person opens, in the states that cost the most at fleet scale: the
first page, a filtered one, a sorted one and a deep one of each list, the session page of a typical
and of a 2,000-request session, a request page, the admin pages, the exports' first byte, and the
cached lookups the list filters share (timed cold, as the first visitor after they expire pays them).
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

DEEP_PAGES = 50


@dataclass(frozen=True)
class Page:
    """One timed thing: a URL read by ``viewer`` or ``admin``, or a plain call."""

    name: str
    url: str = ""
    who: str = "viewer"
    first_byte: bool = False
    call: Callable[[], Any] | None = None
    """Timed instead of a URL: a lookup several pages share."""


def get(client: Any, url: str) -> Any:
    response = client.get(url)
    if response.status_code != 200:
        raise SystemExit(f"{url} answered {response.status_code}")
    return response


def _next_url(response: Any, base: str) -> str:
    found = re.search(r'<a href="([^"]+)"[^>]*rel="next"', response.content.decode())
    if not found:
        raise SystemExit(f"{base} has no next page (is the fleet too small?)")
    link = html.unescape(found.group(1))
    return link if link.startswith("/") else base + link


def deep_sessions_url(client: Any) -> str:
    """Page ``DEEP_PAGES + 1`` of the sessions list, by following the next-page links as a reader does."""
    url = "/sessions/"
    for _ in range(DEEP_PAGES):
        url = _next_url(get(client, url), "/sessions/")
    return url


def last_sessions_url() -> str:
    """The last page of the sessions list: the cursor of the row just before the oldest page."""
    from django.http import QueryDict

    from dashboard.models import Session
    from dashboard.sessions.listing import PAGE_SIZE, SessionFilters, _encode

    ordered = SessionFilters.from_query(QueryDict()).ordered(Session.objects.all())
    oldest_first = ordered.reverse()
    before_last = oldest_first[PAGE_SIZE : PAGE_SIZE + 1].get()
    return f"/sessions/?after={_encode(before_last)}"


def _typical_session(heavy: int) -> int:
    """A session of the median size (about ten requests), not the long one."""
    from dashboard.models import Session

    session = Session.objects.filter(request_count__range=(9, 12)).exclude(pk=heavy).order_by("pk").first()
    if session is None:
        raise SystemExit("no session of about ten requests was loaded")
    return session.pk


def _request_of(session_id: int, ordinal: int) -> int:
    from dashboard.models import Request

    return Request.objects.filter(session_id=session_id, ordinal=ordinal).values_list("pk", flat=True).get()


def _cold(lookup: Callable[[], Any], key: str) -> Callable[[], Any]:
    def call() -> Any:
        from django.core.cache import cache

        cache.delete(key)
        return lookup()

    return call


def _figures_cold(client: Any, session_id: int, *, ledger: bool = True) -> Callable[[], Any]:
    """The long session's page as the first reader after a new analysis or a price change reads it:
    its cost (from the ledger the analysis stored) and its charts made afresh; the context-breakdown
    series, kept by the log's length, stays. Without ``ledger``, as the first reader after an ingest
    not yet analysed: the cost figured from every request."""

    def call() -> Any:
        from django.core.cache import cache

        from dashboard.models import Session, SessionAnalysis, SessionCostLedger
        from dashboard.sessions.figures import session_figures_key

        session = Session.objects.get(pk=session_id)
        analysis = SessionAnalysis.objects.filter(session=session).first()
        cache.delete(session_figures_key(session=session, analysis=analysis))
        if not ledger:
            SessionCostLedger.objects.filter(session=session).delete()
        return get(client, f"/sessions/{session_id}/")

    return call


def all_pages(viewer: Any, heavy_session_id: int) -> list[Page]:
    from dashboard.fleet.client_versions import known_client_versions
    from dashboard.models import FoldRun, IngestJob, Request
    from dashboard.sessions import views as sessions

    # Named _known_models before it was shared with the requests list; the benchmark times either.
    known_models = getattr(sessions, "known_models", None) or sessions._known_models

    typical = _typical_session(heavy_session_id)
    version = Request.objects.exclude(client_version="").values_list("client_version", flat=True).first()
    job = IngestJob.objects.order_by("-error_count").values_list("pk", flat=True).first()
    run = FoldRun.objects.order_by("-pk").values_list("pk", flat=True).first()
    by_hit_rate = _next_url(get(viewer, "/sessions/?sort=hit_rate"), "/sessions/")
    return [
        Page("sessions: first page", "/sessions/"),
        Page("sessions: filtered", "/sessions/?source=research-cluster&model=opus&warnings=on"),
        Page("sessions: sort=-read", "/sessions/?sort=-read"),
        Page("sessions: sort=hit_rate, page 2", by_hit_rate),
        Page(f"sessions: page {DEEP_PAGES + 1} by cursor", deep_sessions_url(viewer)),
        Page("sessions: last page", last_sessions_url()),
        Page("session: typical (10 requests)", f"/sessions/{typical}/"),
        Page("session: 2,000 requests, analysed", f"/sessions/{heavy_session_id}/"),
        Page("session: 2,000 requests, page 20", f"/sessions/{heavy_session_id}/?requests_page=20"),
        Page("session: 2,000 requests, figures cold", call=_figures_cold(viewer, heavy_session_id)),
        Page(
            "session: 2,000 requests, figures cold, no ledger",
            call=_figures_cold(viewer, heavy_session_id, ledger=False),
        ),
        Page("requests: first page", "/requests/"),
        Page("requests: model filter", "/requests/?model=claude-opus-4-1-20250805"),
        Page("requests: client filter", f"/requests/?client_version={version}"),
        Page("requests: sort=-read", "/requests/?sort=-read"),
        Page("requests: sort=-cost", "/requests/?sort=-cost"),
        Page("requests: model filter, sort=uncached", "/requests/?model=gpt-4.1&sort=uncached"),
        Page("requests: page 100 (the last listed)", "/requests/?page=100"),
        Page("request: analysed", f"/requests/{_request_of(heavy_session_id, 1000)}/"),
        Page("request: typical", f"/requests/{_request_of(typical, 5)}/"),
        Page("warnings: first page", "/warnings/"),
        Page("warnings: kind filter", "/warnings/?kind=unexplained-miss"),
        Page("warnings: source filter", "/warnings/?source=eval-grid"),
        Page("warnings: page 50", "/warnings/?page=50"),
        Page("ingest jobs", "/ingest/"),
        Page("ingest job (5,000 errors)", f"/ingest/{job}/"),
        Page("projections", "/projections/"),
        Page("fold run (100,000 sessions)", f"/projections/runs/{run}/"),
        Page("tokens", "/manage/tokens/", who="admin"),
        Page("prices", "/manage/prices/", who="admin"),
        Page("provider rules", "/manage/provider-rules/", who="admin"),
        Page("export csv: first byte", "/sessions/export.csv", first_byte=True),
        Page("export json, filtered: first byte", "/sessions/export.json?warnings=on", first_byte=True),
        Page("client versions (filter, cold)", call=_cold(known_client_versions, "client-versions:known")),
        Page("models (filter, cold)", call=_cold(known_models, "sessions:known-models")),
        Page("fleet cache panels (overview, default range)", call=_fleet_cache),
        Page("overview (default range)", "/"),
    ]


def _fleet_cache() -> Any:
    from dashboard.fleet.cache_panels import fleet_cache_context

    return fleet_cache_context()
