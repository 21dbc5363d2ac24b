"""The real DeepSeek Harness logs beside the checkout, ingested and folded end to end (skipped where
they are absent)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from dashboard.ingest.files import ingest_paths
from dashboard.models import ProjectionRow, Session
from dashboard.refold.folds import fold_session
from dashboard.sessions.breakdown_series import session_breakdown_series
from tests.projections.harness_meter import (
    log_lines,
    meter,
    missing_numbers,
    without_chunks,
    without_every_third_off_surface_line,
    write_log,
)

pytestmark = [pytest.mark.django_db, pytest.mark.shared_data]


def test_every_real_dsh_log_ingests_without_an_error_and_folds_to_what_the_harness_meter_shows(
    shared_data: Path,
) -> None:
    folder = shared_data / "dsh-real"
    summary = ingest_paths(paths=[folder], source_name="harness")
    assert summary.errors == []
    for notice in summary.notices:  # allowed, and each says where and what
        assert notice.path.startswith(str(folder))
        assert notice.line
        # A character no database holds, replaced; or a snapshot's test clock, kept as unknown.
        assert "U+FFFD" in notice.reason or "before 2000, not an agent's wall clock" in notice.reason
    logs = sorted(folder.glob("*.jsonl"))
    assert summary.sessions_added == len(logs) == 29
    for path in logs:
        assert_folds_to_the_meter(path)


def assert_folds_to_the_meter(path: Path) -> None:
    """The stored session of ``path`` is foldable and its row shows the meter's last figures."""
    session = Session.objects.get(source_path__endswith=path.name)
    assert session.unfoldable == "", path.name
    result = fold_session(session_id=session.pk)
    assert [key.error for key in result.keys if key.error] == [], path.name
    steps = list(meter(log_lines(path)))
    if not steps:  # a header alone: nothing to fold
        assert not ProjectionRow.objects.filter(session=session).exists()
        return
    row = ProjectionRow.objects.get(session=session, key="contextBreakdown")
    seq, system, tools, messages = steps[-1]
    assert (row.seq, row.view) == (
        seq,
        {"systemTokens": system, "toolsTokens": tools, "messageTokens": messages},
    ), path.name


@pytest.mark.parametrize("elide", [without_chunks, without_every_third_off_surface_line])
def test_every_real_dsh_log_with_lines_removed_ingests_without_an_error_and_folds_to_the_meter(
    shared_data: Path, tmp_path: Path, elide: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
) -> None:
    gapped: dict[str, int] = {}
    for path in sorted((shared_data / "dsh-real").glob("*.jsonl")):
        whole = log_lines(path)
        copy = write_log(tmp_path / path.name, elide(whole))
        gapped[str(copy)] = missing_numbers(whole, log_lines(copy))
    summary = ingest_paths(paths=[tmp_path], source_name="harness")
    assert summary.errors == []
    assert summary.sessions_added == len(gapped) == 29
    seq_notices = {notice.path: notice.reason for notice in summary.notices if notice.field == "seq"}
    assert set(seq_notices) == {path for path, missing in gapped.items() if missing}
    assert len(seq_notices) > 20  # the copies do have gaps
    for path, reason in seq_notices.items():
        assert reason.startswith(f"{gapped[path]} seq number"), path
    for path in gapped:
        assert_folds_to_the_meter(Path(path))


def test_real_dsh_logs_keep_the_harness_figures_and_flag_where_they_fall_far_short_of_the_count(
    shared_data: Path, viewer_client: Client
) -> None:
    folder = shared_data / "dsh-real"
    ingest_paths(paths=[folder], source_name="harness")
    flagged = []
    for path in sorted(folder.glob("*.jsonl")):
        session = Session.objects.get(source_path__endswith=path.name)
        series = session_breakdown_series(session=session)
        metered = {seq: system + tools + messages for seq, system, tools, messages in meter(log_lines(path))}
        for point in series.points:
            # The harness's own meter, never scaled to the provider's count.
            assert (point.used, point.raw, point.calibration) == (metered[point.seq], None, None), path.name
        if series.shortfall is not None:
            last_call = [point for point in series.points if point.provider is not None][-1]
            gap = series.shortfall
            assert (gap.estimate, gap.reported) == (last_call.used, last_call.provider)
            flagged.append(session)
    assert flagged  # the snapshots' {{system}} and {{tools}} placeholders leave most prompts unexplained
    page = viewer_client.get(flagged[0].get_absolute_url()).content.decode()
    assert 'id="breakdown-shortfall"' in page
