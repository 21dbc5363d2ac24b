"""Every projection definition by key and state version, and which version of each key is live (DESIGN §5).

A row whose ``ver`` differs from the live version of its key is discarded and the log folded again;
bumping one key's live version discards that key's rows only.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from projections.events import FoldError
from projections.folds.breakdown import (
    ContextBreakdownV5,
    ContextBreakdownV6,
    ContextBreakdownV7,
    ContextBreakdownV8,
)
from projections.folds.cache_metrics import CacheMetricsV1
from projections.folds.context_pressure import ContextPressureV1, ContextPressureV2
from projections.folds.fold import FoldStep, ProjectionRow, fold, fold_views, resume, state_size_bytes, to_row
from projections.folds.projection import Projection
from projections.folds.token_usage import TokenUsageV1

AnyProjection = Projection[Any, Any]

_DEFINITIONS: Final[Mapping[tuple[str, int], AnyProjection]] = MappingProxyType(
    {
        (projection.key, projection.state_version): projection
        for projection in (
            ContextBreakdownV5(),
            ContextBreakdownV6(),
            ContextBreakdownV7(),
            ContextBreakdownV8(),
            TokenUsageV1(),
            ContextPressureV1(),
            ContextPressureV2(),
            CacheMetricsV1(),
        )
    }
)

_LIVE: Final[Mapping[str, int]] = MappingProxyType(
    {"contextBreakdown": 8, "tokenUsage": 1, "contextPressure": 2, "cacheMetrics": 1}
)


class UnknownProjection(LookupError):
    """A key or state version with no definition."""


def get_projection(key: str, version: int | None = None) -> AnyProjection:
    """The definition of ``key`` under ``version`` (the live version when ``None``)."""
    if version is None:
        if key not in _LIVE:
            raise UnknownProjection(f"projection key {key!r} is unknown; known keys: {sorted(_LIVE)}")
        version = _LIVE[key]
    try:
        return _DEFINITIONS[(key, version)]
    except KeyError:
        versions = sorted(ver for known, ver in _DEFINITIONS if known == key)
        raise UnknownProjection(
            f"projection {key!r} has no state version {version}; defined versions: {versions}"
        ) from None


def live_versions() -> Mapping[str, int]:
    """The live state version of every key."""
    return _LIVE


def defined_versions(key: str) -> tuple[int, ...]:
    """Every state version defined for ``key``, oldest first (the choices of a re-fold)."""
    return tuple(sorted(ver for known, ver in _DEFINITIONS if known == key))


def live_projections() -> tuple[AnyProjection, ...]:
    """The live definition of every key."""
    return tuple(_DEFINITIONS[(key, ver)] for key, ver in _LIVE.items())


__all__ = [
    "AnyProjection",
    "FoldError",
    "FoldStep",
    "Projection",
    "ProjectionRow",
    "UnknownProjection",
    "defined_versions",
    "fold",
    "fold_views",
    "get_projection",
    "live_projections",
    "live_versions",
    "resume",
    "state_size_bytes",
    "to_row",
]
