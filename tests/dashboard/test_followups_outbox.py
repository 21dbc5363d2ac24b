"""The follow-up outbox: a session's commit records its follow-ups, so a request cut off before it
enqueued them leaves them to be resent, never lost."""

from __future__ import annotations

import io
import json
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from kombu.exceptions import OperationalError as BrokerError

from dashboard.models import PendingFollowup, ProjectionRow, Session, Source
from dashboard.services import followups
from dashboard.services.api_ingest import api_ingest
from dashboard.services.followups import followups_resend
from dashboard.services.tokens import token_create
from tests.dashboard.logs import dsh_lines

pytestmark = pytest.mark.django_db


def ndjson(lines: list[Any]) -> bytes:
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def _ingest_without_its_enqueues(*names: str) -> list[int]:
    """Store sessions as a request would, then stop: the test's transaction never commits, so the
    follow-ups queued for its commit never run, as when a worker is killed right after committing."""
    source, _ = Source.objects.get_or_create(name="farm")
    body = io.BytesIO(b"".join(ndjson(dsh_lines(name, turns=1)) for name in names))
    api_ingest(body=body, source=source)
    return sorted(Session.objects.filter(external_id__in=names).values_list("pk", flat=True))


def test_a_request_cut_off_after_its_commit_leaves_its_followups_in_the_outbox() -> None:
    ids = _ingest_without_its_enqueues("s1", "s2")
    assert sorted(PendingFollowup.objects.values_list("session_id", flat=True)) == ids
    assert not ProjectionRow.objects.exists()


def test_a_resend_runs_the_followups_left_behind_and_empties_the_outbox() -> None:
    ids = _ingest_without_its_enqueues("s1", "s2")
    assert followups_resend(older_than=timedelta(0)) == len(ids)
    assert not PendingFollowup.objects.exists()
    assert set(ProjectionRow.objects.values_list("session_id", flat=True)) == set(ids)


def test_a_resend_leaves_fresh_rows_to_the_request_still_enqueueing_them() -> None:
    _ingest_without_its_enqueues("s1")
    assert followups_resend() == 0
    assert PendingFollowup.objects.count() == 1


def test_a_resend_while_the_broker_is_down_keeps_every_row(monkeypatch: pytest.MonkeyPatch) -> None:
    _ingest_without_its_enqueues("s1", "s2")

    def broker_down(session_id: int) -> None:
        raise BrokerError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(followups, "_FOLLOWUPS", [broker_down])
    assert followups_resend(older_than=timedelta(0)) == 0
    assert PendingFollowup.objects.count() == 2


def test_the_command_resends_and_says_how_many() -> None:
    _ingest_without_its_enqueues("s1")
    out = io.StringIO()
    call_command("resend_followups", "--older-than", "0", stdout=out)
    assert "1 session" in out.getvalue()
    assert not PendingFollowup.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_request_that_enqueues_its_followups_leaves_no_outbox_row() -> None:
    source = Source.objects.create(name="farm")
    _token, secret = token_create(source=source, name="host-1", created_by=None)
    response = Client().post(
        "/api/v1/ingest",
        data=ndjson(dsh_lines("s1", turns=1)),
        content_type="application/x-ndjson",
        headers={"Authorization": f"Bearer {secret}"},
    )
    assert response.status_code == 200
    assert not PendingFollowup.objects.exists()
    assert ProjectionRow.objects.filter(session__external_id="s1").exists()


def test_a_batch_sent_again_unchanged_queues_no_followups(django_capture_on_commit_callbacks: Any) -> None:
    source = Source.objects.create(name="farm")
    body = ndjson(dsh_lines("s1", turns=2))
    with django_capture_on_commit_callbacks(execute=True) as first:
        api_ingest(body=io.BytesIO(body), source=source)
    assert len(first) == 1
    assert not PendingFollowup.objects.exists()  # sent, so no longer pending

    with django_capture_on_commit_callbacks(execute=True) as again:
        result = api_ingest(body=io.BytesIO(body), source=source)
    assert result.summary.sessions_unchanged == 1
    assert result.summary.changed_session_ids == []
    assert again == []  # an exporter's retry costs no fold and no analysis of the session
    assert not PendingFollowup.objects.exists()
