"""The bad-input corpus through ingest: each case named in the errors, and nothing already stored changes."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from dashboard.ingest.files import IngestSummary, ingest_paths
from dashboard.ingest.uploads import UploadRejected, extract_zip, upload_create_job
from dashboard.models import Event, IngestJob, Request, Session, Warning
from dashboard.refold.folds import fold_session
from tests.badinput.corpus import CASES

pytestmark = pytest.mark.django_db


STANDALONE = ("transcript-conflicting-call", "transcript-bad-usage", "five-markers")


def _stored() -> dict[str, Any]:
    """Every stored event and request, as plain values, for comparing before and after."""
    events = {
        (e.session.external_id, e.seq): (e.type, e.data, e.surface_op, e.source_event_seqs, e.ignorable)
        for e in Event.objects.select_related("session")
    }
    requests = {
        (r.session.external_id, r.key): (
            r.ordinal,
            r.uncached_input_tokens,
            r.cache_read_tokens,
            r.cache_write_5m_tokens,
            r.output_tokens,
        )
        for r in Request.objects.select_related("session")
    }
    return {"events": events, "requests": requests}


def _still_there(before: dict[str, Any], after: dict[str, Any]) -> None:
    for kind in ("events", "requests"):
        changed = {k: (v, after[kind].get(k)) for k, v in before[kind].items() if after[kind].get(k) != v}
        assert not changed, f"stored {kind} changed: {changed}"


def _ingest(path: Path, format: str | None = None) -> IngestSummary:
    return ingest_paths(paths=[path], source_name="fleet", format=format)


@pytest.mark.parametrize("name", [n for n in sorted(CASES) if n not in STANDALONE])
def test_a_bad_copy_of_a_stored_session_changes_nothing_stored(name: str, tmp_path: Path) -> None:
    case = CASES[name](tmp_path)
    assert case.baseline is not None
    assert not _ingest(case.baseline).errors
    before = _stored()
    stored = Session.objects.get(external_id=case.external_id)

    summary = _ingest(case.path)

    _still_there(before, _stored())
    session = Session.objects.get(pk=stored.pk)
    if case.where == "line-error":
        assert (str(case.path), case.line, case.field) in [(e.path, e.line, e.field) for e in summary.errors]
    elif case.where == "line-notice":
        assert [(n.path, n.line, n.field) for n in summary.notices] == [
            (str(case.path), case.line, case.field)
        ]
        assert not summary.errors
    elif case.where == "fatal":
        [error] = summary.errors
        assert f"{case.path}:{case.line}: {case.field}:" in error.reason
        assert session.unfoldable == ""  # the stored log is as foldable as it was
    elif case.where == "unfoldable":
        assert session.unfoldable.startswith(f"seq {case.seq}:")
    else:
        assert not summary.errors


@pytest.mark.parametrize("name", ["lone-surrogate", "nul-character"])
def test_unstorable_characters_are_stored_as_replacement_characters(name: str, tmp_path: Path) -> None:
    case = CASES[name](tmp_path)
    summary = _ingest(case.path)
    [notice] = summary.notices
    assert (notice.line, notice.field, summary.errors) == (3, "json", [])
    event = Event.objects.get(session__external_id=case.external_id, seq=1)
    assert "\ufffd" in event.data["content"]
    assert Event.objects.filter(session__external_id=case.external_id).count() == 5


def test_an_unknown_version_alone_is_refused_and_stores_no_session(tmp_path: Path) -> None:
    case = CASES["unknown-version"](tmp_path)
    summary = _ingest(case.path)
    [error] = summary.errors
    assert error.field == "session"
    assert "version: unsupported header version 7" in error.reason
    assert (summary.sessions_added, summary.session_ids) == (0, [])
    assert not Session.objects.filter(external_id=case.external_id).exists()


@pytest.mark.parametrize("name", ["replace-no-claim", "claim-other-range"])
def test_a_fold_stops_at_the_bad_replacement_naming_session_seq_type_and_rule(
    name: str, tmp_path: Path
) -> None:
    case = CASES[name](tmp_path)
    assert not _ingest(case.path).errors
    session = Session.objects.get(external_id=case.external_id)
    result = fold_session(session_id=session.pk)
    errors = [key.error for key in result.keys if key.error]
    assert errors, "the fold accepted a bad replacement"
    assert any(case.external_id in e and f"seq {case.seq}" in e and case.words in e for e in errors)
    warnings = Warning.objects.filter(
        session=session, kind=Warning.Kind.FOLD_ERROR, message__contains=case.words
    )
    assert warnings.exists()
    assert all(f"seq {case.seq}" in warning.place for warning in warnings)
    # The events are all stored: the log is kept whole, only the fold stops.
    assert Event.objects.filter(session=session).count() == case.seq + 1


def test_conflicting_transcript_calls_store_one_request_and_report_the_other(tmp_path: Path) -> None:
    case = CASES["transcript-conflicting-call"](tmp_path)
    summary = _ingest(case.path, case.format)
    assert [(e.line, e.field) for e in summary.errors] == [(4, "message.usage")]
    [request] = Request.objects.all()
    assert (request.uncached_input_tokens, request.cache_read_tokens) == (5, 1000)


def test_absurd_usage_is_refused_and_never_reaches_a_token_column(tmp_path: Path) -> None:
    case = CASES["transcript-bad-usage"](tmp_path)
    summary = _ingest(case.path, case.format)
    assert [(e.line, e.field) for e in summary.errors] == [
        (2, "message.usage.input_tokens"),
        (4, "message.usage.cache_read_input_tokens"),
    ]
    assert list(Request.objects.values_list("cache_read_tokens", flat=True)) == [None, None]


def test_five_markers_are_stored_with_a_marker_limit_warning(tmp_path: Path) -> None:
    case = CASES["five-markers"](tmp_path)
    assert not _ingest(case.path, case.format).errors
    [request] = Request.objects.all()
    assert any(case.words in warning for warning in request.render_warnings)
    assert len(request.markers) == 5


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as bundle:
        for name, data in members.items():
            bundle.writestr(name, data)
    return path


@pytest.mark.parametrize("member", ["../escape.jsonl", "/etc/cachescope.jsonl", "a/../../escape.jsonl"])
def test_a_zip_with_path_traversal_is_refused_before_anything_is_written(member: str, tmp_path: Path) -> None:
    archive = _zip(tmp_path / "logs.zip", {"ok/session.jsonl": b"{}\n", member: b"{}\n"})
    destination = tmp_path / "out" / "logs"
    with pytest.raises(UploadRejected, match="points outside the archive"):
        extract_zip(archive, destination, limit=1 << 20)
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "escape.jsonl").exists()


def test_a_zip_bomb_is_refused_by_its_declared_size_before_decompression(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "bomb.zip", {"session.jsonl": b" " * (8 << 20)})
    assert archive.stat().st_size < 64 * 1024
    with pytest.raises(UploadRejected, match="expands to 8,388,608 bytes"):
        extract_zip(archive, tmp_path / "out", limit=1 << 20)
    assert not (tmp_path / "out").exists()


def test_an_upload_with_a_traversing_zip_creates_no_job(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "logs.zip", {"../../escape.jsonl": b"{}\n"})
    upload = SimpleUploadedFile("logs.zip", archive.read_bytes())
    with pytest.raises(UploadRejected):
        upload_create_job(files=[upload], source_name="laptop", format=None, user=None)
    assert not IngestJob.objects.exists()


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("export.jsonl", b"session,seq,type\ns1,0,user/message\n"),
        ("core.jsonl", bytes(range(256)) * 8),
    ],
    ids=["csv", "binary"],
)
def test_a_refused_file_in_a_folder_is_an_error_and_stores_no_session(
    tmp_path: Path, name: str, data: bytes
) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / name).write_bytes(data)

    summary = _ingest(folder)

    [error] = summary.errors
    assert error.path == str(folder / name)
    assert (summary.sessions_added, summary.session_ids) == (0, [])
    assert not Session.objects.exists()
