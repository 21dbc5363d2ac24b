"""``manage.py reanalyse`` analyses stored sessions again, so request pages follow the current rules."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from dashboard.analysis.stored_sessions import session_analyse
from dashboard.models import RequestAnalysis, SessionAnalysis
from tests.dashboard.test_analysis import analysis_of, conversation, ingest_captures

pytestmark = pytest.mark.django_db


def test_every_session_with_requests_is_analysed_again(tmp_path: Path) -> None:
    session = ingest_captures(tmp_path, conversation())
    session_analyse(session_id=session.pk)
    before = SessionAnalysis.objects.get(session=session).generation
    # As an earlier release left it: a verdict the current rules would not give.
    RequestAnalysis.objects.filter(request__session=session).update(label="stale-label")

    out = StringIO()
    call_command("reanalyse", stdout=out)

    assert out.getvalue().strip() == "1 session analyses queued again"
    assert SessionAnalysis.objects.get(session=session).generation == before + 1
    assert analysis_of(session, "msg_1").label != "stale-label"


def test_only_the_named_sessions_and_sources_are_analysed_again(tmp_path: Path) -> None:
    first = ingest_captures(tmp_path, conversation(), name="first")
    out = StringIO()
    call_command("reanalyse", "--source", "proxy", "--session", str(first.pk), stdout=out)
    assert out.getvalue().strip() == "1 session analyses queued again"


def test_a_session_or_source_that_is_not_stored_is_refused_by_name(tmp_path: Path) -> None:
    ingest_captures(tmp_path, conversation())
    generations = list(SessionAnalysis.objects.values_list("generation", flat=True))
    with pytest.raises(CommandError, match=r"--session: no stored session with requests has id \[99999\]"):
        call_command("reanalyse", "--session", "99999", stdout=StringIO())
    with pytest.raises(CommandError, match="--source: no source is named 'nowhere'"):
        call_command("reanalyse", "--source", "nowhere", stdout=StringIO())
    assert list(SessionAnalysis.objects.values_list("generation", flat=True)) == generations
