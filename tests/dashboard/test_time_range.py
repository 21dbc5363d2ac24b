"""A range counts back from now and is cut into hours, days or weeks; "all" spans the data there
is and coarsens to months and years, never more than a few hundred buckets; the range that widens
one reaches back to the oldest session it leaves out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from dashboard.web.time_range import (
    DEFAULT_RANGE,
    MAX_BUCKETS,
    RANGES,
    Step,
    range_name,
    time_window,
    widening_range,
)

NEWEST = datetime(2026, 3, 4, 15, 42, tzinfo=UTC)  # a Wednesday afternoon


def test_an_unknown_or_missing_range_is_the_default() -> None:
    assert range_name(None) == range_name("1y") == range_name("") == DEFAULT_RANGE == "30d"


def test_no_data_has_no_window() -> None:
    assert time_window("30d", oldest=None, newest=None, now=NEWEST) is None


@pytest.mark.parametrize(
    ("name", "step", "buckets"),
    [("24h", Step.HOUR, 24), ("7d", Step.DAY, 7), ("30d", Step.DAY, 30), ("90d", Step.DAY, 90)],
)
def test_a_fixed_range_ends_with_the_bucket_of_now(name: str, step: Step, buckets: int) -> None:
    newest_data = NEWEST - timedelta(days=200)
    window = time_window(name, oldest=NEWEST - timedelta(days=400), newest=newest_data, now=NEWEST)

    assert window is not None
    assert window.step is step
    assert len(window.buckets) == buckets
    assert window.buckets[-1] <= NEWEST < window.end == window.buckets[-1] + step.width
    assert window.end - window.start == RANGES[name]


def test_all_of_eight_months_is_cut_into_weeks_starting_monday() -> None:
    window = time_window("all", oldest=NEWEST - timedelta(days=240), newest=NEWEST, now=NEWEST)

    assert window is not None
    assert window.step is Step.WEEK
    assert 30 <= len(window.buckets) <= 40
    assert {bucket.weekday() for bucket in window.buckets} == {0}
    assert window.start <= NEWEST - timedelta(days=240)


@pytest.mark.parametrize(("days", "step"), [(1, Step.HOUR), (2, Step.HOUR), (3, Step.DAY), (90, Step.DAY)])
def test_all_of_a_short_history_is_cut_as_finely_as_a_fixed_range_of_its_length(
    days: int, step: Step
) -> None:
    window = time_window("all", oldest=NEWEST - timedelta(days=days), newest=NEWEST, now=NEWEST)

    assert window is not None
    assert window.step is step
    assert len(window.buckets) <= 100


def test_every_range_of_a_long_history_has_at_most_a_hundred_buckets() -> None:
    for name in RANGES:
        window = time_window(name, oldest=NEWEST - timedelta(days=700), newest=NEWEST, now=NEWEST)
        assert window is not None
        assert len(window.buckets) <= 101, name


def test_all_of_a_decade_is_cut_into_calendar_months() -> None:
    window = time_window("all", oldest=NEWEST - timedelta(days=3650), newest=NEWEST, now=NEWEST)

    assert window is not None
    assert window.step is Step.MONTH
    assert 115 <= len(window.buckets) <= 125
    assert {(bucket.day, bucket.hour) for bucket in window.buckets} == {(1, 0)}
    assert window.bucket_end(datetime(2025, 12, 1, tzinfo=UTC)) == datetime(2026, 1, 1, tzinfo=UTC)
    assert window.end == datetime(2026, 4, 1, tzinfo=UTC)


@pytest.mark.parametrize("oldest", [datetime(2000, 1, 1, tzinfo=UTC), datetime(1970, 1, 1, tzinfo=UTC)])
def test_all_since_2000_or_the_epoch_is_cut_into_years_well_under_the_bound(oldest: datetime) -> None:
    window = time_window("all", oldest=oldest, newest=NEWEST, now=NEWEST)

    assert window is not None
    assert window.step is Step.YEAR
    assert len(window.buckets) == NEWEST.year - oldest.year + 1
    assert window.buckets[0] == oldest
    assert window.end == datetime(2027, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize("days", [1, 50, 400, 1500, 2000, 6000, 12000])
def test_all_of_any_history_holds_at_most_the_bound(days: int) -> None:
    window = time_window("all", oldest=NEWEST - timedelta(days=days), newest=NEWEST, now=NEWEST)

    assert window is not None
    assert len(window.buckets) <= MAX_BUCKETS


def test_all_spans_the_data_there_is_however_long_ago_it_stopped() -> None:
    stopped = NEWEST - timedelta(days=200)
    window = time_window("all", oldest=NEWEST - timedelta(days=300), newest=stopped, now=NEWEST)

    assert window is not None
    assert window.start <= NEWEST - timedelta(days=300)
    assert stopped < window.end < stopped + timedelta(days=10)


@pytest.mark.parametrize(
    ("name", "days_back", "wider"),
    [("24h", 3, "7d"), ("7d", 20, "30d"), ("30d", 31, "90d"), ("30d", 60, "90d"), ("30d", 120, "all")],
)
def test_the_widening_range_is_the_shortest_that_reaches_the_oldest_session_left_out(
    name: str, days_back: int, wider: str
) -> None:
    assert widening_range(name, oldest_activity=NEWEST - timedelta(days=days_back), now=NEWEST) == wider


def test_a_session_without_a_time_is_shown_by_all_time_only() -> None:
    assert widening_range("24h", oldest_activity=None, now=NEWEST) == "all"
