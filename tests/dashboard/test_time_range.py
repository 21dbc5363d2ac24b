"""A range ends at the newest data and is cut into hours, days or weeks; "all" coarsens to months
and years, never more than a few hundred buckets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from dashboard.web.time_range import DEFAULT_RANGE, MAX_BUCKETS, RANGES, Step, range_name, time_window

NEWEST = datetime(2026, 3, 4, 15, 42, tzinfo=UTC)  # a Wednesday afternoon


def test_an_unknown_or_missing_range_is_the_default() -> None:
    assert range_name(None) == range_name("1y") == range_name("") == DEFAULT_RANGE == "30d"


def test_no_data_has_no_window() -> None:
    assert time_window("30d", oldest=None, newest=None) is None


@pytest.mark.parametrize(
    ("name", "step", "buckets"),
    [("24h", Step.HOUR, 24), ("7d", Step.DAY, 7), ("30d", Step.DAY, 30), ("90d", Step.DAY, 90)],
)
def test_a_fixed_range_ends_with_the_bucket_of_the_newest_data(name: str, step: Step, buckets: int) -> None:
    window = time_window(name, oldest=NEWEST - timedelta(days=400), newest=NEWEST)

    assert window is not None
    assert window.step is step
    assert len(window.buckets) == buckets
    assert window.buckets[-1] <= NEWEST < window.end == window.buckets[-1] + step.width
    assert window.end - window.start == RANGES[name]


def test_all_of_eight_months_is_cut_into_weeks_starting_monday() -> None:
    window = time_window("all", oldest=NEWEST - timedelta(days=240), newest=NEWEST)

    assert window is not None
    assert window.step is Step.WEEK
    assert 30 <= len(window.buckets) <= 40
    assert {bucket.weekday() for bucket in window.buckets} == {0}
    assert window.start <= NEWEST - timedelta(days=240)


@pytest.mark.parametrize(("days", "step"), [(1, Step.HOUR), (2, Step.HOUR), (3, Step.DAY), (90, Step.DAY)])
def test_all_of_a_short_history_is_cut_as_finely_as_a_fixed_range_of_its_length(
    days: int, step: Step
) -> None:
    window = time_window("all", oldest=NEWEST - timedelta(days=days), newest=NEWEST)

    assert window is not None
    assert window.step is step
    assert len(window.buckets) <= 100


def test_every_range_of_a_long_history_has_at_most_a_hundred_buckets() -> None:
    for name in RANGES:
        window = time_window(name, oldest=NEWEST - timedelta(days=700), newest=NEWEST)
        assert window is not None
        assert len(window.buckets) <= 101, name


def test_all_of_a_decade_is_cut_into_calendar_months() -> None:
    window = time_window("all", oldest=NEWEST - timedelta(days=3650), newest=NEWEST)

    assert window is not None
    assert window.step is Step.MONTH
    assert 115 <= len(window.buckets) <= 125
    assert {(bucket.day, bucket.hour) for bucket in window.buckets} == {(1, 0)}
    assert window.bucket_end(datetime(2025, 12, 1, tzinfo=UTC)) == datetime(2026, 1, 1, tzinfo=UTC)
    assert window.end == datetime(2026, 4, 1, tzinfo=UTC)


@pytest.mark.parametrize("oldest", [datetime(2000, 1, 1, tzinfo=UTC), datetime(1970, 1, 1, tzinfo=UTC)])
def test_all_since_2000_or_the_epoch_is_cut_into_years_well_under_the_bound(oldest: datetime) -> None:
    window = time_window("all", oldest=oldest, newest=NEWEST)

    assert window is not None
    assert window.step is Step.YEAR
    assert len(window.buckets) == NEWEST.year - oldest.year + 1
    assert window.buckets[0] == oldest
    assert window.end == datetime(2027, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize("days", [1, 50, 400, 1500, 2000, 6000, 12000])
def test_all_of_any_history_holds_at_most_the_bound(days: int) -> None:
    window = time_window("all", oldest=NEWEST - timedelta(days=days), newest=NEWEST)

    assert window is not None
    assert len(window.buckets) <= MAX_BUCKETS
