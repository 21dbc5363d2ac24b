"""Client releases across the fleet: the releases seen, for the list filters. The hit rate of each
release is the overview's, summed off the usage rollups
(:func:`dashboard.fleet.usage.client_version_rows`)."""

from __future__ import annotations

from django.core.cache import cache

from dashboard.models import Request
from dashboard.storage.distinct_values import distinct_values
from projections.client_version import version_sort_key

KNOWN_VERSIONS_SECONDS = 60


def known_client_versions() -> list[str]:
    """Every client release seen, in release order; read off the requests' client index, and cached
    briefly."""

    def load() -> list[str]:
        return sorted(distinct_values(Request, "client_version"), key=version_sort_key)

    return list(cache.get_or_set("client-versions:known", load, KNOWN_VERSIONS_SECONDS))
