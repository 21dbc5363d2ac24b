from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from projections.breakdown_calibration import (
    FAR_SHORT_SHARE,
    FAR_SHORT_TOKENS,
    SessionCalibration,
    context_shortfall,
    scaled_breakdown,
)
from projections.context_series import RequestFigures
from projections.request_breakdown import RequestBreakdown

SONNET = "claude-sonnet-4-20250514"
HAIKU = "claude-3-5-haiku-20241022"


@given(
    st.tuples(*[st.integers(0, 200_000)] * 3).filter(lambda bands: sum(bands) > 0),
    st.integers(0, 400_000),
)
def test_scaled_bands_sum_to_the_target_each_within_a_token_of_its_share(
    bands: tuple[int, int, int], target: int
) -> None:
    scaled = scaled_breakdown(RequestBreakdown(*bands), target)
    assert scaled.total == target
    shown = (scaled.system_tokens, scaled.tools_tokens, scaled.message_tokens)
    for band, value in zip(bands, shown, strict=True):
        assert abs(value - band * target / sum(bands)) < 1


def test_the_difference_is_spread_in_proportion_to_each_band() -> None:
    # The real claude-trace request the issue names: estimated 14,683, counted 15,036.
    scaled = scaled_breakdown(RequestBreakdown(3537, 9811, 1335), 15_036)
    assert scaled == RequestBreakdown(3622, 10047, 1367)


def test_an_estimate_of_nothing_has_no_proportion_to_spread() -> None:
    assert scaled_breakdown(RequestBreakdown(0, 0, 0), 500) == RequestBreakdown(0, 0, 0)


def test_a_request_with_a_count_is_calibrated_to_it_and_keeps_its_raw_estimate() -> None:
    raw = RequestBreakdown(100, 200, 700)
    calibrated = SessionCalibration([]).calibrate(RequestFigures(SONNET, "main", raw, 1_030))
    assert calibrated is not None
    assert (calibrated.bands.total, calibrated.raw, calibrated.calibration) == (1_030, raw, "provider count")


def test_a_request_without_a_count_takes_its_model_s_ratio_in_the_session() -> None:
    session = [
        RequestFigures(SONNET, "main", RequestBreakdown(100, 300, 600), 1_020),
        RequestFigures(SONNET, "main", RequestBreakdown(100, 300, 1_600), 2_040),
        RequestFigures(HAIKU, "side", RequestBreakdown(0, 0, 100), 80),
    ]
    sizes = SessionCalibration(session)
    uncounted = RequestFigures(SONNET, "main", RequestBreakdown(100, 300, 2_600), None)
    calibrated = sizes.calibrate(uncounted)
    assert calibrated is not None
    assert calibrated.calibration == "session factor"
    assert calibrated.bands.total == round(3_000 * (1_020 + 2_040) / (1_000 + 2_000))  # not Haiku's 0.8


def test_a_model_with_no_count_in_the_session_is_shown_as_estimated() -> None:
    raw = RequestBreakdown(10, 20, 30)
    calibrated = SessionCalibration([]).calibrate(RequestFigures(SONNET, "main", raw, None))
    assert calibrated is not None
    assert (calibrated.bands, calibrated.calibration) == (raw, None)
    assert SessionCalibration([]).calibrate(RequestFigures(SONNET, "main", None, 500)) is None


def test_a_log_far_short_of_the_provider_count_is_flagged_and_a_close_one_is_not() -> None:
    gap = context_shortfall(3_057, 10_935)
    assert gap is not None
    assert (gap.missing, round(gap.share, 2)) == (7_878, 0.72)
    assert context_shortfall(14_683, 15_036) is None  # the heuristic's own few per cent
    assert context_shortfall(10, 900) is None  # far in share, but under the token floor
    assert context_shortfall(5_000, None) is None
    reported = 50_000
    at_the_edge = round(reported * (1 - FAR_SHORT_SHARE))
    assert context_shortfall(at_the_edge, reported) is None
    assert context_shortfall(at_the_edge - 1, reported) is not None
    assert reported * FAR_SHORT_SHARE > FAR_SHORT_TOKENS
