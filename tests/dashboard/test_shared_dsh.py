"""The real DeepSeek Harness logs beside the checkout, ingested and folded end to end (skipped where
they are absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dashboard.ingest.files import ingest_paths
from dashboard.models import ProjectionRow, Session
from dashboard.refold.folds import fold_session
from tests.projections.harness_meter import log_lines, meter

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
        session = Session.objects.get(source_path__endswith=path.name)
        assert session.unfoldable == "", path.name
        result = fold_session(session_id=session.pk)
        assert [key.error for key in result.keys if key.error] == [], path.name
        steps = list(meter(log_lines(path)))
        if not steps:  # a header alone: nothing to fold
            assert not ProjectionRow.objects.filter(session=session).exists()
            continue
        row = ProjectionRow.objects.get(session=session, key="contextBreakdown")
        seq, system, tools, messages = steps[-1]
        assert (row.seq, row.view) == (
            seq,
            {"systemTokens": system, "toolsTokens": tools, "messageTokens": messages},
        ), path.name
