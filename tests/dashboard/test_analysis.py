from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from dashboard.analysis import stored_sessions as analysis_service
from dashboard.analysis.stored_requests import block_raws, stored_record
from dashboard.analysis.stored_sessions import analysis_claim, analysis_request, session_analyse
from dashboard.costs.session_costs import session_cost
from dashboard.ingest.files import ingest_paths
from dashboard.models import (
    Event,
    HostNote,
    Request,
    RequestAnalysis,
    Session,
    SessionAnalysis,
    Source,
    Warning,
)
from dashboard.worker.tasks import analyse_session_task
from projections.cache.render.rebuild import StoredRequestError
from projections.cache.render.rendering import render_request
from tests.dashboard.logs import write_jsonl

MODEL = "claude-sonnet-4-20250514"
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
SYSTEM = "You are a careful engineer. " * 240  # about 1,600 tokens: above Sonnet's 1,024 minimum
TOOL = {"name": "read_file", "description": "Read a file.", "input_schema": {"type": "object"}}
EPHEMERAL = {"type": "ephemeral"}


def text(value: str, *, marked: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": value}
    if marked:
        block["cache_control"] = EPHEMERAL
    return block


def body(messages: list[dict[str, Any]], *, system: str = SYSTEM, model: str = MODEL) -> dict[str, Any]:
    """A Messages request with one tool and a marked system prompt."""
    return {
        "model": model,
        "max_tokens": 1024,
        "tools": [TOOL],
        "system": [text(system, marked=True)],
        "messages": messages,
    }


def capture(
    request: dict[str, Any], *, key: str, at: datetime, read: int, write: int, uncached: int = 10
) -> dict[str, Any]:
    """One anthropic-capture record: the request as sent and the response with its usage."""
    return {
        "request": request,
        "response": {
            "id": key,
            "type": "message",
            "model": request["model"],
            "usage": {
                "input_tokens": uncached,
                "cache_creation_input_tokens": write,
                "cache_read_input_tokens": read,
                "output_tokens": 20,
            },
        },
        "started_at": at.isoformat(),
    }


def conversation(edit: str = "Please read <script>alert(1)</script> main.py") -> list[dict[str, Any]]:
    """Three turns of one lineage; the third edits the first user message in place."""
    first = [{"role": "user", "content": [text("Please read main.py", marked=True)]}]
    second = [
        {"role": "user", "content": [text("Please read main.py")]},
        {"role": "assistant", "content": [text("It defines main().")]},
        {"role": "user", "content": [text("And tests.py?", marked=True)]},
    ]
    third = [
        {"role": "user", "content": [text(edit)]},
        {"role": "assistant", "content": [text("It defines main().")]},
        {"role": "user", "content": [text("And tests.py?")]},
        {"role": "assistant", "content": [text("It tests main().")]},
        {"role": "user", "content": [text("Thanks.", marked=True)]},
    ]
    return [
        capture(body(first), key="msg_1", at=START, read=0, write=1700),
        capture(body(second), key="msg_2", at=START + timedelta(seconds=30), read=1700, write=30),
        capture(body(third), key="msg_3", at=START + timedelta(seconds=60), read=1600, write=150),
    ]


def ingest_captures(tmp_path: Path, records: list[dict[str, Any]], name: str = "capture") -> Session:
    path = write_jsonl(tmp_path / f"{name}.jsonl", records)
    summary = ingest_paths(paths=[path], source_name="proxy", format="anthropic-capture")
    assert not summary.errors, summary.errors
    return Session.objects.get(external_id=name)


def analysis_of(session: Session, key: str) -> RequestAnalysis:
    return RequestAnalysis.objects.get(request__session=session, request__key=key)


@pytest.mark.django_db
def test_stored_requests_rebuild_to_the_units_they_were_stored_as(tmp_path: Path) -> None:
    session = ingest_captures(tmp_path, conversation())
    rows = list(Request.objects.filter(session=session).order_by("ordinal"))
    raws = block_raws(unit[0] for row in rows for unit in row.units)
    for row, original in zip(rows, conversation(), strict=True):
        record = stored_record(row, raws)
        assert record.body is not None
        again = render_request("anthropic", "messages", record.body)
        expected = render_request("anthropic", "messages", original["request"])
        assert again.prefix_hashes == expected.prefix_hashes
        assert again.markers == expected.markers


@pytest.mark.django_db
def test_a_stored_request_whose_block_is_missing_names_it(tmp_path: Path) -> None:
    session = ingest_captures(tmp_path, conversation()[:1])
    row = Request.objects.get(session=session)
    with pytest.raises(StoredRequestError, match=f"request {row.pk}: block .* is not stored"):
        stored_record(row, {})


@pytest.mark.django_db
def test_the_analysis_keeps_figures_markers_and_the_first_change_per_request(tmp_path: Path) -> None:
    session = ingest_captures(tmp_path, conversation())
    session_analyse(session_id=session.pk)

    first, second, third = (analysis_of(session, key) for key in ("msg_1", "msg_2", "msg_3"))
    assert (first.data["previous"], first.data["markers"]) == (None, [])
    assert second.predicted_read == 1700 == second.request.cache_read_tokens
    assert [m["status"] for m in second.data["markers"]] == ["kept", "kept"]
    assert second.data["first_change"] is None
    change = third.data["first_change"]
    assert (change["tier"], change["cause"], change["identity"]) == ("messages", "edited", "messages:#0.0")
    assert change["remedy"].startswith("A message already sent was edited in place")
    assert [m["status"] for m in third.data["markers"]] == ["kept", "broken"]
    assert third.wire_allows == third.data["markers"][0]["prefix_tokens"] > 1024
    assert third.label.startswith("prefix-changed@messages")
    assert set(third.data["cacheability"]) == {"tools", "system", "messages"}
    assert SessionAnalysis.objects.get(session=session).status == "done"


@pytest.mark.django_db
def test_a_credit_above_what_the_wire_allows_is_an_over_credit_warning(tmp_path: Path) -> None:
    session = ingest_captures(tmp_path, conversation())
    Event.objects.create(
        session=session,
        seq=3,
        type="cache/credit",
        data={"requestRef": "msg_3", "creditedTokens": 1880, "markers": [{"ordinal": 0, "offset": 1880}]},
    )
    session_analyse(session_id=session.pk)

    third = analysis_of(session, "msg_3")
    assert third.credited == 1880
    warning = Warning.objects.get(session=session, kind="over-credit")
    assert warning.request == third.request
    assert warning.place == "messages:#0.0"
    assert f"credited 1880 tokens, the wire allows {third.wire_allows}" in warning.message
    session.refresh_from_db()
    assert session.warning_count == Warning.objects.filter(session=session).count() >= 1


@pytest.mark.django_db
def test_client_records_match_requests_by_key_or_ordinal_and_count_the_rest(tmp_path: Path) -> None:
    session = ingest_captures(tmp_path, conversation())
    for seq, ref in ((3, "#1"), (4, "nowhere")):
        Event.objects.create(
            session=session, seq=seq, type="cache/credit", data={"requestRef": ref, "creditedTokens": 5}
        )
    session_analyse(session_id=session.pk)

    assert analysis_of(session, "msg_2").credited == 5
    assert SessionAnalysis.objects.get(session=session).unmatched_records == 1


@pytest.mark.django_db
def test_repeated_findings_are_one_warning_per_kind_and_place_with_a_count(tmp_path: Path) -> None:
    crowded = {**body([{"role": "user", "content": [text("hi", marked=True)]}])}
    crowded["system"] = [text(f"part {i} " + SYSTEM[:400], marked=True) for i in range(5)]
    records = [
        capture(crowded, key=f"msg_{i}", at=START + timedelta(seconds=i), read=0, write=0, uncached=900)
        for i in range(3)
    ]
    session = ingest_captures(tmp_path, records)
    session_analyse(session_id=session.pk)
    session_analyse(session_id=session.pk)  # again: the same rows, not twice as many

    warning = Warning.objects.get(session=session, kind="marker-limit")
    assert (warning.place, warning.count) == ("main", 3)
    assert warning.request is not None
    assert warning.request.key == "msg_0"
    assert "6 cache breakpoints" in warning.message


@pytest.mark.django_db
def test_host_log_lines_are_kept_verbatim_as_host_notes_not_warnings(tmp_path: Path) -> None:
    session = ingest_captures(tmp_path, conversation())
    line = "[kv-unified] msg_2: reused 1700 tokens, 2 markers kept"
    at = START + timedelta(minutes=3)
    event = Event.objects.create(
        session=session,
        seq=3,
        type="cache/log",
        time=at,
        data={"level": "info", "line": line, "requestRef": "msg_2"},
    )
    session_analyse(session_id=session.pk)
    note = HostNote.objects.get(session=session)
    assert note.request is not None
    assert (note.seq, note.line, note.level, note.time, note.request.key) == (3, line, "info", at, "msg_2")
    assert not Warning.objects.filter(session=session, message=line).exists()

    event.delete()
    session_analyse(session_id=session.pk)
    assert not HostNote.objects.filter(session=session).exists()


@pytest.mark.django_db
def test_an_unreadable_client_record_is_reported_with_its_seq(tmp_path: Path) -> None:
    session = ingest_captures(tmp_path, conversation())
    Event.objects.create(session=session, seq=3, type="cache/credit", data={"requestRef": "msg_1"})
    session_analyse(session_id=session.pk)

    warning = Warning.objects.get(session=session, kind="ingest-error")
    assert warning.place == "client record seq 3"
    assert "creditedTokens" in warning.message


@pytest.mark.django_db
def test_a_render_record_that_disagrees_with_the_request_is_a_render_mismatch(tmp_path: Path) -> None:
    session = ingest_captures(tmp_path, conversation())
    Event.objects.create(
        session=session,
        seq=3,
        type="cache/render-record",
        data={
            "requestRef": "msg_2",
            "hashScheme": "cachescope-blake2b-v1",
            "markers": [{"ordinal": 0, "identity": "system:0", "prefixHash": "0" * 32}],
        },
    )
    session_analyse(session_id=session.pk)

    warning = Warning.objects.get(session=session, kind="render-mismatch")
    assert warning.request is not None
    assert warning.request.key == "msg_2"
    assert "marker 0" in warning.message


def usage_row(session: Session, ordinal: int, at: datetime, read: int, write: int, **extra: Any) -> Request:
    return Request.objects.create(
        session=session,
        ordinal=ordinal,
        key=f"req_{ordinal}",
        provider="anthropic",
        platform="anthropic",
        api="messages",
        model=extra.pop("model", MODEL),
        started_at=at,
        uncached_input_tokens=extra.pop("uncached", 50),
        cache_read_tokens=read,
        cache_write_5m_tokens=write,
        cache_write_1h_tokens=0,
        output_tokens=10,
        usage_convention="anthropic",
    )


@pytest.mark.django_db
def test_transcript_only_sessions_carry_the_previous_read_and_write_forward() -> None:
    source = Source.objects.create(name="laptop")
    session = Session.objects.create(source=source, external_id="cc", format="claude-code")
    usage_row(session, 0, START, 0, 12_000)
    usage_row(session, 1, START + timedelta(minutes=1), 12_000, 500)
    usage_row(session, 2, START + timedelta(minutes=2), 3_000, 9_700)  # evicted: 9,500 re-written
    Event.objects.create(session=session, seq=0, type="compaction/end", time=START + timedelta(minutes=3))
    usage_row(session, 3, START + timedelta(minutes=4), 3_000, 2_000)
    session_analyse(session_id=session.pk)

    rows = {a.request.ordinal: a for a in RequestAnalysis.objects.filter(session=session)}
    assert (rows[0].predicted_read, rows[0].data["rule"]) == (None, "first-call")
    assert (rows[1].predicted_read, rows[1].label, rows[1].material) == (12_000, "", False)
    assert (rows[2].predicted_read, rows[2].label, rows[2].material) == (12_500, "unexplained", True)
    assert rows[2].rewritten_tokens == 9_500
    assert rows[3].data["rule"] == "after-compaction"
    warning = Warning.objects.get(session=session, kind="unexplained-miss")
    assert (warning.request, warning.count) == (rows[2].request, 1)


@pytest.mark.django_db
def test_re_written_prefixes_are_counted_per_request(tmp_path: Path) -> None:
    records = conversation()
    records[1] = capture(
        records[1]["request"], key="msg_2", at=START + timedelta(minutes=10), read=0, write=1730
    )
    records[2]["started_at"] = (START + timedelta(minutes=11)).isoformat()
    session = ingest_captures(tmp_path, records)
    session_analyse(session_id=session.pk)

    expired = analysis_of(session, "msg_2")
    assert expired.label == "ttl-expired"
    first = analysis_of(session, "msg_1").request
    left_cached = sum(
        n or 0 for n in (first.cache_read_tokens, first.cache_write_5m_tokens, first.cache_write_1h_tokens)
    )
    assert expired.rewritten_tokens == min(1730, left_cached) > 0  # msg_1's prefix, written again
    assert analysis_of(session, "msg_1").rewritten_tokens == 0
    # The overview ranks sessions by these; the session's page gives their sum: one figure.
    shown = session_cost(session=session, analysis=SessionAnalysis.objects.get(session=session))
    stored = RequestAnalysis.objects.filter(session=session).values_list("rewritten_tokens", flat=True)
    assert sum(stored) == shown.rewritten_tokens


@pytest.mark.django_db
def test_the_task_claims_a_queued_analysis_once() -> None:
    source = Source.objects.create(name="laptop")
    session = Session.objects.create(source=source, external_id="cc", format="claude-code")
    usage_row(session, 0, START, 0, 12_000)
    assert analysis_request(session_id=session.pk)
    analyse_session_task.delay(session.pk)

    job = SessionAnalysis.objects.get(session=session)
    assert (job.status, job.requests_total, job.requests_done) == ("done", 1, 1)
    assert RequestAnalysis.objects.filter(session=session).count() == 1
    assert not analysis_claim(session_id=session.pk, owner="another")


@pytest.mark.django_db
def test_the_claim_records_the_run_s_total_and_the_run_its_end_with_its_results() -> None:
    source = Source.objects.create(name="laptop")
    session = Session.objects.create(source=source, external_id="cc", format="claude-code")
    usage_row(session, 0, START, 0, 12_000)
    usage_row(session, 1, START + timedelta(minutes=1), 12_000, 300)
    assert analysis_request(session_id=session.pk)
    assert analysis_claim(session_id=session.pk, owner="task-a")
    job = SessionAnalysis.objects.get(session=session)
    assert (job.status, job.requests_total, job.requests_done) == ("running", 2, 0)

    with CaptureQueriesContext(connection) as captured:
        session_analyse(session_id=session.pk, owner="task-a")
    job_writes = [q["sql"] for q in captured if q["sql"].startswith('UPDATE "dashboard_sessionanalysis"')]
    assert len(job_writes) == 2  # the generation stored, then the end: no progress write of its own
    job.refresh_from_db()
    assert (job.status, job.requests_total, job.requests_done) == ("done", 2, 2)


def claimed_by_task_a() -> Session:
    """A transcript session of two calls whose queued analysis task-a has claimed."""
    source = Source.objects.create(name="laptop")
    session = Session.objects.create(source=source, external_id="cc", format="claude-code")
    for ordinal in range(2):
        usage_row(session, ordinal, START + timedelta(minutes=ordinal), 12_000 * ordinal, 12_000)
    analysis_request(session_id=session.pk)
    assert analysis_claim(session_id=session.pk, owner="task-a")
    return session


def newer_ingest(session: Session) -> None:
    """A third call arrives and asks for the analysis again."""
    usage_row(session, 2, START + timedelta(minutes=2), 24_000, 12_000)
    analysis_request(session_id=session.pk)


def ingest_during_the_run(monkeypatch: pytest.MonkeyPatch, then: Any) -> None:
    """Make the next analysis see a newer ingest arrive while it runs, and then run ``then``."""
    engine = analysis_service.analyse_records

    def overtaken(*args: Any, **kwargs: Any) -> Any:
        monkeypatch.setattr(analysis_service, "analyse_records", engine)
        result = engine(*args, **kwargs)
        then()
        return result

    monkeypatch.setattr(analysis_service, "analyse_records", overtaken)


@pytest.mark.django_db
def test_a_run_overtaken_by_a_newer_ingest_still_stores_what_it_read_and_stays_queued(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    session = claimed_by_task_a()
    ingest_during_the_run(monkeypatch, lambda: newer_ingest(session))
    session_analyse(session_id=session.pk, owner="task-a")

    job = SessionAnalysis.objects.get(session=session)
    assert (job.status, job.generation, job.stored_generation) == ("queued", 2, 1)
    assert RequestAnalysis.objects.filter(session=session).count() == 2  # what task-a read
    assert analysis_claim(session_id=session.pk, owner="task-b")
    session_analyse(session_id=session.pk, owner="task-b")
    job.refresh_from_db()
    assert (job.status, job.stored_generation) == ("done", 2)
    assert RequestAnalysis.objects.filter(session=session).count() == 3


@pytest.mark.django_db
def test_an_older_reading_never_replaces_a_newer_one(monkeypatch: pytest.MonkeyPatch) -> None:
    session = claimed_by_task_a()

    def newer_ingest_analysed_first() -> None:
        newer_ingest(session)
        assert analysis_claim(session_id=session.pk, owner="task-b")
        session_analyse(session_id=session.pk, owner="task-b")

    ingest_during_the_run(monkeypatch, newer_ingest_analysed_first)
    session_analyse(session_id=session.pk, owner="task-a")  # finishes last, having read generation 1

    job = SessionAnalysis.objects.get(session=session)
    assert (job.status, job.stored_generation) == ("done", 2)
    assert RequestAnalysis.objects.filter(session=session).count() == 3  # task-b's, not task-a's


@pytest.mark.django_db
def test_a_failed_analysis_records_its_error_on_the_job(monkeypatch: pytest.MonkeyPatch) -> None:
    source = Source.objects.create(name="laptop")
    session = Session.objects.create(source=source, external_id="cc", format="claude-code")
    analysis_request(session_id=session.pk)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise ValueError("the engine broke")

    monkeypatch.setattr("dashboard.analysis.stored_sessions.analyse_records", broken)
    with pytest.raises(ValueError, match="the engine broke"):
        analyse_session_task.delay(session.pk)
    job = SessionAnalysis.objects.get(session=session)
    assert (job.status, job.message) == ("failed", "ValueError: the engine broke")


@pytest.mark.django_db
def test_ingest_queues_the_analysis_when_it_commits(
    tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        session = ingest_captures(tmp_path, conversation())
    assert SessionAnalysis.objects.get(session=session).status == "done"
    assert RequestAnalysis.objects.filter(session=session).count() == 3


@pytest.mark.django_db
def test_a_system_prompt_rewrite_between_two_calls_predicts_no_carried_read() -> None:
    source = Source.objects.create(name="laptop")
    session = Session.objects.create(source=source, external_id="dsh-rewrite", format="dsh")
    usage_row(session, 0, START, 0, 12_000)
    Event.objects.create(
        session=session,
        seq=0,
        type="system/message",
        time=START + timedelta(seconds=30),
        surface_op={"op": "replace", "start": 0, "end": 0},
        data={"message": {"role": "system", "content": "v2"}},
    )
    usage_row(session, 1, START + timedelta(minutes=1), 0, 12_400)
    session_analyse(session_id=session.pk)

    second = RequestAnalysis.objects.get(session=session, request__ordinal=1)
    assert (second.predicted_read, second.data["rule"]) == (None, "system-changed")
    assert not Warning.objects.filter(session=session, kind="unexplained-miss").exists()


@pytest.mark.django_db
def test_credits_beyond_what_a_transcript_allows_are_one_over_credit_warning_per_cause() -> None:
    source = Source.objects.create(name="laptop")
    session = Session.objects.create(source=source, external_id="dsh-naive", format="dsh")
    seq = 0
    for turn in range(3):
        at = START + timedelta(minutes=turn)
        usage_row(session, turn, at, 0, 12_000)
        Event.objects.create(
            session=session,
            seq=seq,
            type="system/message",
            time=at - timedelta(seconds=10),
            surface_op={"op": "replace", "start": 0, "end": 0},
            data={"message": {"role": "system", "content": "x"}},
        )
        Event.objects.create(
            session=session,
            seq=seq + 1,
            type="cache/credit",
            time=at,
            data={"requestRef": f"req_{turn}", "creditedTokens": 11_000},
        )
        seq += 2
    session_analyse(session_id=session.pk)

    warning = Warning.objects.get(session=session, kind="over-credit")
    assert warning.place == "main: after a system prompt rewrite"
    assert warning.count == 2  # nothing bounds the first call of a lineage
    assert "credited 11000 tokens, the wire allows 0" in warning.message


@pytest.mark.django_db
def test_a_running_analysis_is_not_claimed_again_while_its_lease_is_live() -> None:
    session = claimed_by_task_a()
    assert not analysis_claim(session_id=session.pk, owner="task-a")  # the same task, delivered again
    assert not analysis_claim(session_id=session.pk, owner="task-b")


@pytest.mark.django_db
def test_an_analysis_whose_worker_died_is_taken_over_once_its_lease_runs_out() -> None:
    session = claimed_by_task_a()
    lapsed = datetime.now(UTC) - timedelta(seconds=1)
    SessionAnalysis.objects.filter(session=session).update(lease_until=lapsed)
    assert analysis_claim(session_id=session.pk, owner="task-b")
    assert SessionAnalysis.objects.get(session=session).claimed_by == "task-b"
