"""``manage.py whatif`` on a log file and on a stored session, its refusals, and ``explain --json``'s
cost and miss cost of every request."""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from dashboard.ingest.files import ingest_paths
from dashboard.models import ModelPrice, Request, ScenarioSaving, Session, SessionSavings, Source
from dashboard.savings.refresh import session_savings_refresh
from tests.dashboard.logs import clock_log, write_jsonl

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
KEYS = {
    "scenario",
    "supported",
    "reason",
    "requests",
    "uncached_tokens",
    "read_tokens",
    "write_tokens",
    "cost_usd",
}


def whatif(*args: str) -> str:
    out = StringIO()
    call_command("whatif", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def whatif_json(*args: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(whatif(*args, "--json"))
    return rows


def stored(tmp_path: Path) -> Session:
    summary = ingest_paths(paths=[clock_log(tmp_path)], source_name="laptop", format="anthropic-capture")
    assert not summary.errors, summary.errors
    return Session.objects.get()


def test_whatif_of_a_log_file_prints_one_object_per_scenario_with_the_rules_figures(tmp_path: Path) -> None:
    rows = {row["scenario"]: row for row in whatif_json(str(clock_log(tmp_path)))}

    assert list(rows) == [
        "as-recorded",
        "stable-prefix",
        "ttl-1h",
        "rolling-breakpoint",
        "no-attribution-block",
        "stable-cache-key",
        "extended-retention",
        "best",
    ]
    for row in rows.values():
        assert set(row) >= KEYS
    # Sonnet 4.5 from the seeded price table: 121,000 written at $3.75 and 2,000 output at $15.
    recorded = rows["as-recorded"]
    assert (recorded["read_tokens"], recorded["write_tokens"], recorded["uncached_tokens"]) == (0, 121_000, 0)
    assert recorded["cost_usd"] == pytest.approx(0.48375)
    assert recorded["rules_error_usd"] == 0
    stable = rows["stable-prefix"]
    assert (stable["read_tokens"], stable["write_tokens"]) == (105_300, 15_700)
    assert stable["cost_usd"] == pytest.approx(0.120465)
    assert rows["best"]["combination"] == ["stable-prefix"]
    assert rows["stable-cache-key"]["supported"] is False
    assert rows["stable-cache-key"]["cost_usd"] is None


def test_whatif_of_a_log_file_stores_nothing(tmp_path: Path) -> None:
    whatif(str(clock_log(tmp_path)))
    assert not Session.objects.exists()
    assert not SessionSavings.objects.exists()


def test_whatif_of_a_stored_session_gives_what_its_log_gives(tmp_path: Path) -> None:
    session = stored(tmp_path)
    SessionSavings.objects.all().delete()
    by_id = whatif_json(str(session.pk), "--scenario", "stable-prefix", "ttl-1h")
    by_name = whatif_json(session.external_id, "--scenario", "stable-prefix", "--scenario", "ttl-1h")
    from_file = whatif_json(str(clock_log(tmp_path)), "--scenario", "stable-prefix", "ttl-1h")

    assert [row["scenario"] for row in by_id] == ["as-recorded", "stable-prefix", "ttl-1h"]
    assert by_id == by_name == from_file
    assert not SessionSavings.objects.exists()  # read, never written


def test_whatif_prints_a_table_without_json(tmp_path: Path) -> None:
    table = whatif(str(clock_log(tmp_path)), "--scenario", "stable-prefix", "ttl-1h")
    assert "session clock" in table
    stable = next(line for line in table.splitlines() if line.startswith("stable-prefix"))
    assert "$0.12" in stable
    assert "$0.363" in stable  # saves
    hour = next(line for line in table.splitlines() if line.startswith("ttl-1h"))
    assert "-$0.272" in hour  # a change that costs more


def refusal(*args: str) -> CommandError:
    with pytest.raises(CommandError) as caught:
        whatif(*args)
    assert caught.value.returncode == 2
    return caught.value


def test_an_unknown_scenario_is_refused_by_name_with_exit_code_2(tmp_path: Path) -> None:
    error = refusal(str(clock_log(tmp_path)), "--scenario", "ttl-2h")
    assert "unknown scenario 'ttl-2h'" in str(error)


def test_a_stored_session_without_requests_is_refused_and_nothing_changes() -> None:
    session = Session.objects.create(
        source=Source.objects.create(name="laptop"), external_id="empty", format="dsh"
    )
    error = refusal(str(session.pk))
    assert f"session {session.pk} (empty): the session has no request with reported usage" in str(error)
    assert not SessionSavings.objects.exists()
    assert not ScenarioSaving.objects.exists()


def test_a_model_without_a_price_is_refused_by_name_and_nothing_changes(tmp_path: Path) -> None:
    session = stored(tmp_path)
    session_savings_refresh(session_id=session.pk)
    before = list(SessionSavings.objects.values_list("session_id", "inputs_key", "results"))
    assert before
    requests = Request.objects.count()
    ModelPrice.objects.filter(pattern__startswith="claude-sonnet-4").delete()

    error = refusal(str(session.pk))

    assert "no price for model 'claude-sonnet-4-5-20250929'" in str(error)
    assert list(SessionSavings.objects.values_list("session_id", "inputs_key", "results")) == before
    assert Request.objects.count() == requests


def test_a_log_without_any_request_is_refused_with_exit_code_2(tmp_path: Path) -> None:
    prompt = {
        "type": "user",
        "sessionId": "cc-empty",
        "uuid": "u1",
        "timestamp": "2026-01-05T09:00:00Z",
        "message": {"role": "user", "content": "hello"},
    }
    path = write_jsonl(tmp_path / "cc-empty.jsonl", [prompt])
    error = refusal(str(path))
    assert "no session has a request with reported usage (sessions: cc-empty)" in str(error)


def test_a_name_that_is_neither_a_file_nor_a_session_is_refused() -> None:
    error = refusal("no-such-session")
    assert "no stored session has the id or external id 'no-such-session'" in str(error)


def test_the_command_exits_with_code_2_on_bad_input(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "whatif", str(clock_log(tmp_path)), "--scenario", "nope"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 2
    assert "unknown scenario 'nope'" in done.stderr
