from __future__ import annotations

import json
import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from dashboard.analysis.stored_sessions import session_analyse
from dashboard.ingest.files import ingest_paths
from dashboard.models import Request, RequestAnalysis, Session

pytestmark = pytest.mark.django_db

FIXTURE_SESSIONS = Path(__file__).resolve().parents[1] / "projections/formats/fixtures/codex/sessions"
OLDER = "0199e2a1-0000-7000-8000-00000000000a"
NEWER = "019b0c3d-0000-7000-8000-00000000000b"
COMPACTED = "019aa111-0000-7000-8000-00000000000c"
BARE = "01989abc-0000-7000-8000-00000000000d"


@pytest.fixture
def codex_home(tmp_path: Path) -> Path:
    """A ``~/.codex/sessions`` tree (``YYYY/MM/DD/rollout-*.jsonl``) holding the fixture rollouts."""
    sessions = tmp_path / ".codex" / "sessions"
    shutil.copytree(FIXTURE_SESSIONS, sessions)
    return sessions


def final_totals(tree: Path) -> dict[str, dict[str, int]]:
    """Each rollout's last cumulative ``total_token_usage``, by session id, as the CLI summed it."""
    totals: dict[str, dict[str, int]] = {}
    for path in tree.rglob("rollout-*.jsonl"):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            payload = record.get("payload") or {}
            if payload.get("type") == "token_count" and payload.get("info"):
                session_id = path.name.removesuffix(".jsonl")[-len(OLDER) :]
                totals[session_id] = payload["info"]["total_token_usage"]
    return totals


def run(*args: str) -> str:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue()


def test_a_codex_sessions_tree_is_walked_into_one_session_per_rollout(codex_home: Path) -> None:
    summary = ingest_paths(paths=[codex_home], source_name="laptop")
    assert summary.errors == []
    assert summary.sessions_added == 4
    stored = {s.external_id: s for s in Session.objects.all()}
    assert set(stored) == {OLDER, NEWER, COMPACTED, BARE}
    assert {s.format for s in stored.values()} == {"codex"}
    assert (stored[NEWER].format_version, stored[NEWER].cwd) == ("0.150.0", "/srv/api")
    assert stored[BARE].request_count == 2
    assert stored[BARE].hit_rate is None, "a rollout without token counts reports no cache figures"


def test_session_totals_match_the_cli_s_running_totals(codex_home: Path) -> None:
    ingest_paths(paths=[codex_home], source_name="laptop")
    for session_id, total in final_totals(codex_home).items():
        session = Session.objects.get(external_id=session_id)
        written = total.get("cache_write_input_tokens")  # a CLI that reports no write: unknown, not 0
        assert session.cache_read_tokens == total["cached_input_tokens"]
        assert session.cache_write_tokens == written
        not_written = total["input_tokens"] - total["cached_input_tokens"] - (written or 0)
        assert session.uncached_input_tokens == not_written
        assert session.output_tokens == total["output_tokens"]
        requests = Request.objects.filter(session=session)
        reasoning = sum(r.usage_raw["reasoning_output_tokens"] for r in requests)
        assert reasoning == total["reasoning_output_tokens"]
        assert session.hit_rate == pytest.approx(total["cached_input_tokens"] / total["input_tokens"])


def test_ingesting_the_tree_again_adds_nothing(codex_home: Path) -> None:
    first = ingest_paths(paths=[codex_home], source_name="laptop")
    again = ingest_paths(paths=[codex_home], source_name="laptop")
    assert (again.sessions_added, again.events_added, again.requests_added) == (0, 0, 0)
    assert again.sessions_unchanged == 4
    assert again.duplicates == first.events_added + first.requests_added
    assert Request.objects.count() == first.requests_added


def test_a_rollout_ingested_while_it_grows_stores_each_call_once_with_its_usage(codex_home: Path) -> None:
    rollout = next(codex_home.rglob(f"*{NEWER}.jsonl"))
    lines = rollout.read_text().splitlines(keepends=True)
    rollout.write_text("".join(lines[:17]))  # the last call's tool call and output, no count yet
    ingest_paths(paths=[rollout], source_name="laptop")
    assert Request.objects.filter(session__external_id=NEWER).count() == 2
    rollout.write_text("".join(lines))
    grown = ingest_paths(paths=[rollout], source_name="laptop")
    assert (grown.sessions_updated, grown.requests_added) == (1, 2)
    session = Session.objects.get(external_id=NEWER)
    total = final_totals(codex_home)[NEWER]
    assert session.cache_read_tokens == total["cached_input_tokens"]
    assert session.output_tokens == total["output_tokens"]
    assert session.request_count == 4


def test_the_ingest_command_reads_codex_by_detection_or_when_forced(codex_home: Path) -> None:
    rollout = next(codex_home.rglob(f"*{OLDER}.jsonl"))
    out = run("ingest", str(rollout), "--format", "codex")
    assert "1 sessions (1 new, 0 updated, 0 unchanged)" in out
    assert "3 requests added" in out
    out = run("ingest", str(codex_home))
    assert "3 sessions (3 new, 0 updated, 0 unchanged)" in out
    assert "1 files unchanged" in out
    with pytest.raises(CommandError, match="invalid choice: 'codex-cli'"):
        run("ingest", str(codex_home), "--format", "codex-cli")


def test_codex_calls_are_predicted_by_the_transcript_predictor(codex_home: Path) -> None:
    ingest_paths(paths=[codex_home], source_name="laptop")
    session = Session.objects.get(external_id=NEWER)
    session_analyse(session_id=session.pk)
    rows = RequestAnalysis.objects.filter(session=session).order_by("request__ordinal")
    reported = [row.request.cache_read_tokens for row in rows]
    assert [row.predicted_read for row in rows] == [None, *reported[1:]]
    assert [row.label for row in rows] == ["", "", "", ""]


def test_every_codex_rollout_folds_into_a_context_breakdown(codex_home: Path) -> None:
    for rollout in sorted(codex_home.rglob("rollout-*.jsonl")):
        rows = [json.loads(line) for line in run("breakdown", str(rollout), "--json").splitlines()]
        assert rows, rollout
        assert all("error" not in row for row in rows), rollout
    compacted = next(codex_home.rglob(f"*{COMPACTED}.jsonl"))
    rows = [json.loads(line) for line in run("breakdown", str(compacted), "--json").splitlines()]
    prompts = [row["providerPromptTokens"] for row in rows if "providerPromptTokens" in row]
    assert prompts == [50000, 50600, 51000, 3000]


def test_the_session_page_shows_a_codex_session(codex_home: Path, viewer_client: Client) -> None:
    ingest_paths(paths=[codex_home], source_name="laptop")
    session = Session.objects.get(external_id=COMPACTED)
    response = viewer_client.get(reverse("dashboard:session", args=[session.pk]))
    assert response.status_code == 200
    page = response.content.decode()
    assert "gpt-5.1-codex" in page
    assert "compaction" in page


def test_explain_labels_the_call_after_a_codex_compaction(codex_home: Path) -> None:
    rollout = next(codex_home.rglob(f"*{COMPACTED}.jsonl"))
    results = json.loads(run("explain", str(rollout), "--json"))
    figures = [r["figures"] for r in results]
    reported = [f["reported_read"] for f in figures]
    assert [f["predicted_read"] for f in figures] == [None, reported[1], reported[2], 0]
    assert [r["label"] for r in results] == [None, None, None, "compacted"]
