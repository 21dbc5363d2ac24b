from __future__ import annotations

from projections.cache.explain.warnings import (
    dedupe,
    marker_limit,
    model_error,
    over_credit,
    render_mismatch,
    unexplained_miss,
)
from projections.cache.predict.client_records import ReceiptMismatch


def test_each_check_returns_nothing_when_all_agree() -> None:
    assert render_mismatch("r", "main", []) is None
    assert over_credit("r", "main", 1000, 1000) is None
    assert over_credit("r", "main", None, 0) is None
    assert unexplained_miss("r", "main", 48_000, 50_000, 60_000, identical_in_ttl=True) is None
    assert model_error("r", "main", 1030, 1000) is None
    assert marker_limit("r", "main", 4) is None


def test_each_check_names_its_kind_place_and_figures() -> None:
    mismatch = render_mismatch("r", "main", [ReceiptMismatch("marker 1", "a" * 64, "b" * 64)])
    assert mismatch is not None
    assert mismatch.kind == "render-mismatch"
    assert "marker 1" in mismatch.message
    credit = over_credit("r", "messages:#4.0", 9000, 2000)
    assert credit is not None
    assert credit.place == "messages:#4.0"
    assert "9000" in credit.message
    miss = unexplained_miss("r", "main", 10_000, 50_000, 60_000, identical_in_ttl=True)
    assert miss is not None
    assert miss.kind == "unexplained-miss"
    assert model_error("r", "main", 5000, 1000) is not None
    limit = marker_limit("r", "main", 5)
    assert limit is not None
    assert "5 cache breakpoints" in limit.message


def test_an_unexplained_miss_needs_an_identical_prefix_inside_the_ttl_and_a_material_gap() -> None:
    assert unexplained_miss("r", "main", 0, 50_000, 60_000, identical_in_ttl=False) is None
    assert unexplained_miss("r", "main", 0, 1_500, 2_000, identical_in_ttl=True) is None
    assert unexplained_miss("r", "main", None, 50_000, 60_000, identical_in_ttl=True) is None


def test_dedupe_groups_by_kind_and_place_with_a_count() -> None:
    warnings = [over_credit(f"r{i}", "messages:#4.0", 9000, 0) for i in range(3)]
    warnings += [marker_limit("r9", "main", 6), None]
    grouped = dedupe(warnings)
    assert [(g.kind, g.place, g.count, g.first_request, g.last_request) for g in grouped] == [
        ("over-credit", "messages:#4.0", 3, "r0", "r2"),
        ("marker-limit", "main", 1, "r9", "r9"),
    ]
