"""The session page counts in words that agree with their number."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client

from dashboard.analysis.stored_sessions import session_analyse
from dashboard.models import RequestAnalysis, Session, Source
from tests.dashboard.test_analysis import START, usage_row

pytestmark = pytest.mark.django_db


@pytest.fixture
def session() -> Session:
    return Session.objects.create(source=Source.objects.create(name="laptop"), external_id="s", format="dsh")


def subagent(parent: Session, name: str, requests: int) -> Session:
    return Session.objects.create(
        source=parent.source,
        external_id=name,
        format="dsh",
        parent=parent,
        request_count=requests,
        hit_rate=0.95,
    )


def test_a_subagent_of_one_request_says_request_not_requests(viewer_client: Client, session: Session) -> None:
    subagent(session, "one", 1)
    subagent(session, "four", 4)
    page = viewer_client.get(session.get_absolute_url()).content.decode()

    assert "1 request · hit rate 95.0%" in page
    assert "1 requests" not in page
    assert "4 requests · hit rate 95.0%" in page


@pytest.mark.parametrize(("count", "words"), [(1, "material miss"), (4, "material misses")])
def test_the_material_miss_count_links_the_whole_word(
    viewer_client: Client, session: Session, count: int, words: str
) -> None:
    for n in range(count + 1):
        usage_row(session, n, START + timedelta(minutes=n), read=0, write=4_000)
    session_analyse(session_id=session.pk)
    later = RequestAnalysis.objects.filter(session=session, request__ordinal__gt=0)
    later.update(material=True, label="unexplained")
    page = viewer_client.get(session.get_absolute_url()).content.decode()

    assert re.search(rf"<strong>{count} <a class=\"term\" [^>]*>{words}</a></strong>", page)
