from __future__ import annotations

import json
from pathlib import Path

import pytest

from dashboard.ingest.files import ingest_paths, path_as_given
from dashboard.models import Event, ProjectionRow, Session
from dashboard.refold.folds import fold_session, session_records
from projections.folds.fold import fold
from projections.folds.registry import get_projection
from tests.dashboard.logs import dsh_lines, write_jsonl

pytestmark = pytest.mark.django_db


def test_ingest_stores_a_session_with_its_events(dsh_log: Path) -> None:
    summary = ingest_paths(paths=[dsh_log], source_name="laptop")
    session = Session.objects.get(external_id="s1")
    assert summary.sessions_added == 1
    assert summary.events_added == 5
    assert list(session.events.values_list("seq", flat=True)) == [0, 1, 2, 3, 4]
    assert session.source.name == "laptop"
    assert session.format == "dsh"
    assert session.event_count == 5
    assert session.cwd == "/work/project"


def test_ingesting_the_same_file_twice_adds_nothing(dsh_log: Path) -> None:
    ingest_paths(paths=[dsh_log], source_name="laptop")
    second = ingest_paths(paths=[dsh_log], source_name="laptop")
    assert (second.sessions_added, second.events_added, second.requests_added) == (0, 0, 0)
    assert second.sessions_unchanged == 1
    assert (second.duplicate_events, second.duplicate_requests, second.duplicates) == (5, 2, 7)
    assert Event.objects.count() == 5


def test_a_grown_log_adds_only_its_new_events(tmp_path: Path) -> None:
    path = tmp_path / "grow" / "session.jsonl"
    write_jsonl(path, dsh_lines("grow", turns=1))
    ingest_paths(paths=[path], source_name="laptop")
    write_jsonl(path, dsh_lines("grow", turns=3))
    summary = ingest_paths(paths=[path], source_name="laptop")
    assert summary.sessions_updated == 1
    assert summary.events_added == 4
    assert Session.objects.get(external_id="grow").event_count == 7


def test_corrupted_lines_are_reported_and_the_good_sessions_land(tmp_path: Path) -> None:
    good = write_jsonl(tmp_path / "good" / "session.jsonl", dsh_lines("good", turns=2))
    bad_path = tmp_path / "bad" / "session.jsonl"
    lines = [json.dumps(line) for line in dsh_lines("bad", turns=2)]
    lines[3] = lines[3][:25]  # a truncated line in the middle
    bad_path.parent.mkdir(parents=True)
    bad_path.write_text("\n".join(lines) + "\n")
    summary = ingest_paths(paths=[good, bad_path], source_name="laptop")
    assert Session.objects.filter(external_id="good").exists()
    assert [(e.path, e.line) for e in summary.errors] == [(str(bad_path), 4)]


def test_an_unknown_header_version_is_refused_with_the_file_named(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "future" / "session.jsonl", dsh_lines("future", turns=1, version=9))
    summary = ingest_paths(paths=[path], source_name="laptop")
    assert len(summary.errors) == 1
    assert summary.errors[0].path == str(path)
    assert "9" in summary.errors[0].reason
    assert not Event.objects.filter(session__external_id="future").exists()


def test_a_missing_path_is_an_error_and_the_other_paths_go_on(tmp_path: Path, dsh_log: Path) -> None:
    summary = ingest_paths(paths=[tmp_path / "nope.jsonl", dsh_log], source_name="laptop")
    assert summary.sessions_added == 1
    assert summary.errors[0].reason == "no such file or folder"


def test_a_later_copy_fills_a_hole_left_in_the_stored_log(tmp_path: Path) -> None:
    path = tmp_path / "holey" / "session.jsonl"
    lines = dsh_lines("holey", turns=2)
    bad = [json.dumps(line) for line in lines]
    bad[3] = bad[3][:20]  # seq 2 is lost to a truncated line; the log goes on
    path.parent.mkdir()
    path.write_text("\n".join(bad) + "\n")
    ingest_paths(paths=[path], source_name="laptop")
    assert list(Event.objects.order_by("seq").values_list("seq", flat=True)) == [0, 1, 3, 4]

    write_jsonl(path, lines)
    summary = ingest_paths(paths=[path], source_name="laptop")
    # Four events and the reply at seq 4 (a request) were stored; the lost reply at seq 2 comes in now.
    assert (summary.events_added, summary.requests_added) == (1, 1)
    assert (summary.duplicate_events, summary.duplicate_requests) == (4, 1)
    session = Session.objects.get(external_id="holey")
    assert list(session.events.order_by("seq").values_list("seq", flat=True)) == [0, 1, 2, 3, 4]
    assert session.event_count == 5


def test_filling_a_gap_discards_the_rows_folded_past_it_so_the_next_fold_counts_the_event(
    tmp_path: Path,
) -> None:
    path = tmp_path / "gapped" / "session.jsonl"
    lines = dsh_lines("gapped", turns=2)
    write_jsonl(path, [line for line in lines if line.get("seq") != 1])  # the first question elided
    ingest_paths(paths=[path], source_name="laptop")
    session = Session.objects.get(external_id="gapped")
    fold_session(session_id=session.pk)
    gapped = ProjectionRow.objects.get(session=session, key="contextBreakdown")
    assert gapped.seq == 4

    write_jsonl(path, lines)
    ingest_paths(paths=[path], source_name="laptop")
    assert not ProjectionRow.objects.filter(session=session, seq__gte=1).exists()
    fold_session(session_id=session.pk)
    whole = ProjectionRow.objects.get(session=session, key="contextBreakdown")
    folded = fold(get_projection("contextBreakdown"), session_records(session_id=session.pk))
    assert whole.val == get_projection("contextBreakdown").serialize(folded)
    assert whole.view["messageTokens"] > gapped.view["messageTokens"]


def test_a_grown_log_moves_the_last_activity_to_its_newest_event(tmp_path: Path) -> None:
    path = tmp_path / "grow" / "session.jsonl"
    write_jsonl(path, dsh_lines("grow", turns=1))
    ingest_paths(paths=[path], source_name="laptop")
    first = Session.objects.get(external_id="grow").last_activity
    write_jsonl(path, dsh_lines("grow", turns=3))
    ingest_paths(paths=[path], source_name="laptop")
    session = Session.objects.get(external_id="grow")
    newest = session.events.order_by("-seq").first()
    assert newest is not None
    assert session.last_activity == newest.time
    assert session.last_activity > first


def test_a_job_names_a_file_by_its_path_within_the_folder_it_was_given() -> None:
    roots = ["/srv/logs/", "/srv/one.jsonl"]
    assert path_as_given("/srv/logs/a/session.jsonl", roots) == "a/session.jsonl"
    assert path_as_given("/srv/one.jsonl", roots) == "/srv/one.jsonl"  # a file given is named as given
    assert path_as_given("/srv/logs/a/s.jsonl:3: header: bad", roots) == "a/s.jsonl:3: header: bad"
    assert path_as_given("/var/log/x.jsonl", ["/"]) == "/var/log/x.jsonl"


def test_a_saved_upload_folder_is_named_by_its_last_part_alone() -> None:
    folder = "/data/uploads/1-c0ef6695cb96"
    assert path_as_given(folder, [folder], saved=True) == "1-c0ef6695cb96"
    assert path_as_given(folder + "/broken-json.jsonl", [folder], saved=True) == "broken-json.jsonl"
