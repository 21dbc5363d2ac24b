from __future__ import annotations

import pytest

from projections.hit_rate import hit_rate


def test_hit_rate_is_read_over_uncached_read_and_writes() -> None:
    assert hit_rate(read=600, uncached=300, writes=100) == 600 / 1_000


def test_no_cache_figure_reported_is_unknown_not_zero() -> None:
    assert hit_rate(read=None, uncached=1_000, writes=None) is None


def test_writes_without_reads_count_reads_as_zero() -> None:
    assert hit_rate(read=None, uncached=100, writes=400) == 0.0


def test_reads_without_writes_count_writes_as_zero() -> None:
    assert hit_rate(read=900, uncached=100, writes=None) == 0.9


def test_reported_zeros_with_nothing_to_divide_by_are_unknown() -> None:
    assert hit_rate(read=0, uncached=0, writes=0) is None


def test_reported_zero_reads_over_uncached_input_are_a_zero_rate() -> None:
    assert hit_rate(read=0, uncached=500, writes=0) == 0.0


def test_an_unreported_uncached_figure_adds_nothing() -> None:
    assert hit_rate(read=300, uncached=None, writes=100) == pytest.approx(0.75)


def test_arguments_are_keyword_only_so_buckets_cannot_be_swapped() -> None:
    with pytest.raises(TypeError):
        hit_rate(1, 2, 3)  # type: ignore[misc]
