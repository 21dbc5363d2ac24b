from __future__ import annotations

import pytest

from projections.folds.breakdown import ContextBreakdownV5, ContextBreakdownV8
from projections.folds.registry import (
    UnknownProjection,
    defined_versions,
    get_projection,
    live_projections,
    live_versions,
)


def test_live_versions_name_every_key() -> None:
    assert live_versions() == {
        "contextBreakdown": 8,
        "tokenUsage": 1,
        "contextPressure": 2,
        "cacheMetrics": 1,
    }


def test_get_projection_without_a_version_gives_the_live_one() -> None:
    assert isinstance(get_projection("contextBreakdown"), ContextBreakdownV8)


def test_get_projection_gives_an_older_version_on_request() -> None:
    assert isinstance(get_projection("contextBreakdown", 5), ContextBreakdownV5)


def test_every_live_definition_has_its_key_and_version() -> None:
    assert {(p.key, p.state_version) for p in live_projections()} == set(live_versions().items())


def test_defined_versions_lists_old_and_new() -> None:
    assert defined_versions("contextBreakdown") == (5, 6, 7, 8)


def test_an_unknown_key_is_refused_naming_the_known_keys() -> None:
    with pytest.raises(UnknownProjection, match=r"'nope' is unknown; known keys: .*contextBreakdown"):
        get_projection("nope")


def test_an_unknown_version_is_refused_naming_the_defined_ones() -> None:
    with pytest.raises(UnknownProjection, match=r"no state version 4; defined versions: \[5, 6, 7, 8\]"):
        get_projection("contextBreakdown", 4)
