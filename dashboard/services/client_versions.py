"""Client releases across the fleet: the releases seen (for the list filters) and the hit rate of
each summed off the requests themselves (the overview's panel sums the usage rollups instead, with
:func:`dashboard.services.fleet_usage.client_version_rows`)."""

from __future__ import annotations

from django.core.cache import cache
from django.db.models import Count, Sum

from dashboard.models import Request
from dashboard.services.distinct_values import distinct_values
from dashboard.services.fleet_usage import ClientVersionRow
from dashboard.time_range import TimeWindow
from projections.client_version import version_sort_key
from projections.hit_rate import hit_rate

KNOWN_VERSIONS_SECONDS = 60


def known_client_versions() -> list[str]:
    """Every client release seen, in release order; read off the requests' client index, and cached
    briefly."""

    def load() -> list[str]:
        return sorted(distinct_values(Request, "client_version"), key=version_sort_key)

    return list(cache.get_or_set("client-versions:known", load, KNOWN_VERSIONS_SECONDS))


def hit_rate_by_client_version(window: TimeWindow | None = None) -> list[ClientVersionRow]:
    """Per client release, its token sums and hit rate, from one aggregate query, in release order;
    only the requests that started in ``window`` when one is given."""
    requests = Request.objects.exclude(client_version="")
    if window is not None:
        requests = requests.filter(started_at__gte=window.start, started_at__lt=window.end)
    sums = (
        requests.values("client_version")
        .annotate(
            sessions=Count("session", distinct=True),
            requests=Count("id"),
            read=Sum("cache_read_tokens"),
            uncached=Sum("uncached_input_tokens"),
            write_5m=Sum("cache_write_5m_tokens"),
            write_1h=Sum("cache_write_1h_tokens"),
        )
        .order_by()
    )
    rows = []
    for row in sums:
        write_5m, write_1h = row["write_5m"], row["write_1h"]
        writes = None if write_5m is None and write_1h is None else (write_5m or 0) + (write_1h or 0)
        rows.append(
            ClientVersionRow(
                client_version=row["client_version"],
                sessions=row["sessions"],
                requests=row["requests"],
                prompt_tokens=(row["read"] or 0) + (row["uncached"] or 0) + (writes or 0),
                hit_rate=hit_rate(read=row["read"], uncached=row["uncached"], writes=writes),
            )
        )
    return sorted(rows, key=lambda r: version_sort_key(r.client_version))
