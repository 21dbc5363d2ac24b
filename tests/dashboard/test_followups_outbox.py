"""The follow-up outbox: a session's commit records its follow-ups, so a request cut off before it
enqueued them leaves them to be resent, never lost."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from kombu.exceptions import OperationalError as BrokerError

from dashboard.access.tokens import token_create
from dashboard.ingest import followups
from dashboard.ingest.api.lines import api_ingest
from dashboard.ingest.files import IngestSummary, ingest_paths, ingest_session
from dashboard.ingest.followups import followups_clear_later, followups_resend
from dashboard.models import PendingFollowup, ProjectionRow, Session, Source
from projections.formats import read_sessions
from projections.normalized import FormatError, SessionImport
from tests.dashboard.logs import dsh_lines, write_dsh_log
from tests.dashboard.postgres import other_connection

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

    def broker_down(session_ids: list[int]) -> None:
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


def _imported(folder: Path, name: str, *, breaks: bool = False) -> SessionImport:
    """A dsh session as a reader yields it; with ``breaks``, one whose log cannot be read to its end."""
    path = write_dsh_log(folder / f"{name}.jsonl", session_id=name, turns=1)
    (imported,) = read_sessions(path)
    if breaks:
        items = list(imported.items)

        def broken() -> Iterator[Any]:
            yield from items[:3]
            raise FormatError(str(path), 4, "json", "cut off")

        imported.items = broken()
    return imported


@pytest.mark.django_db(transaction=True)
def test_each_sessions_transaction_takes_the_outbox_rows_of_those_delivered_before_it(
    tmp_path: Path,
) -> None:
    source = Source.objects.create(name="farm")
    summary = IngestSummary()

    def outbox() -> list[int]:
        return list(PendingFollowup.objects.values_list("session_id", flat=True))

    with followups_clear_later():
        first = ingest_session(_imported(tmp_path, "s1"), source=source, summary=summary)
        assert first is not None
        assert ProjectionRow.objects.filter(session=first).exists()  # its follow-ups ran
        assert outbox() == [first.pk]  # and its row waits for the next commit

        broken = ingest_session(_imported(tmp_path, "s2", breaks=True), source=source, summary=summary)
        assert broken is None
        assert outbox() == [first.pk]  # rolled back, with the deletion

        second = ingest_session(_imported(tmp_path, "s3"), source=source, summary=summary)
        assert second is not None
        assert outbox() == [second.pk]
    assert outbox() == []


@pytest.mark.django_db(transaction=True)
def test_a_folder_ingest_leaves_no_outbox_row_once_its_followups_ran(tmp_path: Path) -> None:
    for name in ("s1", "s2", "s3"):
        write_dsh_log(tmp_path / name / "session.jsonl", session_id=name, turns=1)
    summary = ingest_paths(paths=[tmp_path], source_name="farm")
    assert summary.sessions_added == 3
    assert not PendingFollowup.objects.exists()
    assert ProjectionRow.objects.values("session_id").distinct().count() == 3


@pytest.mark.django_db(transaction=True)
def test_a_folder_ingest_while_the_broker_is_down_keeps_every_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("s1", "s2"):
        write_dsh_log(tmp_path / name / "session.jsonl", session_id=name, turns=1)

    def broker_down(session_ids: list[int]) -> None:
        raise BrokerError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(followups, "_FOLLOWUP_MODULES", [])
    monkeypatch.setattr(followups, "_FOLLOWUPS", [broker_down])
    summary = ingest_paths(paths=[tmp_path], source_name="farm")
    ids = sorted(Session.objects.values_list("pk", flat=True))
    assert sorted(summary.followups_pending) == ids
    assert sorted(PendingFollowup.objects.values_list("session_id", flat=True)) == ids


@pytest.mark.django_db(transaction=True)
def test_clearing_the_outbox_passes_over_a_row_another_transaction_holds(tmp_path: Path) -> None:
    from django.db import connection, transaction

    if connection.vendor != "postgresql":
        pytest.skip("row locks are PostgreSQL's; SQLite's writers take turns")
    source = Source.objects.create(name="farm")
    summary = IngestSummary()
    other = other_connection()
    try:
        with followups_clear_later():
            first = ingest_session(_imported(tmp_path, "s1"), source=source, summary=summary)
            second = ingest_session(_imported(tmp_path, "s2"), source=source, summary=summary)
            assert first is not None
            assert second is not None
            # Another ingest holds the second session's outbox row, as when two clear the same rows.
            other.execute(
                "SELECT 1 FROM dashboard_pendingfollowup WHERE session_id = %s FOR UPDATE", [second.pk]
            )
            with transaction.atomic():
                # Waiting for that row would fail here rather than hang: the clear must not wait.
                with connection.cursor() as cursor:
                    cursor.execute("SET LOCAL lock_timeout = '2s'")
                followups.followups_clear_delivered()
        other.rollback()
        assert list(PendingFollowup.objects.values_list("session_id", flat=True)) == [second.pk]
    finally:
        other.close()
