from __future__ import annotations

import json
import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from dashboard.models import IngestJob
from tests.dashboard.logs import write_dsh_log

pytestmark = pytest.mark.django_db


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_ingest_prints_a_summary_and_records_a_job(dsh_log: Path) -> None:
    out, _ = run("ingest", str(dsh_log), "--source", "laptop")
    assert "1 sessions (1 new, 0 updated, 0 unchanged), 5 events" in out
    job = IngestJob.objects.get()
    assert (job.status, job.events_added, job.source_name) == ("done", 5, "laptop")


def test_ingest_says_so_when_nothing_is_new(dsh_log: Path) -> None:
    run("ingest", str(dsh_log))
    out, _ = run("ingest", str(dsh_log))
    assert "Nothing new" in out


def test_ingest_counts_repeated_events_and_repeated_requests_apart(dsh_log: Path, tmp_path: Path) -> None:
    run("ingest", str(dsh_log))
    # A copy of the log elsewhere is a file of its own, read whole: what it holds is stored already.
    copy = copied(dsh_log, tmp_path / "copy")
    out, _ = run("ingest", str(copy), "--json")
    result = json.loads(out)
    assert (result["duplicate_events"], result["duplicate_requests"], result["duplicates"]) == (5, 2, 7)
    job = IngestJob.objects.get(pk=result["job"])
    assert (job.duplicate_events, job.duplicate_requests, job.duplicates) == (5, 2, 7)
    out, _ = run("ingest", str(copied(dsh_log, tmp_path / "another")))
    assert "; 5 duplicate events, 2 duplicate requests skipped;" in out


def copied(log: Path, folder: Path) -> Path:
    """A copy of ``log`` in ``folder``: an incremental ingest reads it whole, as a file it never read."""
    folder.mkdir()
    return Path(shutil.copy2(log, folder / log.name))


def test_ingest_json_summary_lists_each_bad_line(tmp_path: Path, dsh_log: Path) -> None:
    broken = tmp_path / "broken" / "session.jsonl"
    broken.parent.mkdir()
    lines = dsh_log.read_text().splitlines()
    lines[2] = "{not json"
    broken.write_text("\n".join(lines) + "\n")
    out, _ = run("ingest", str(broken), "--json")
    result = json.loads(out)
    assert result["errors"] == 1
    assert result["error_lines"][0].startswith(f"{broken}:3:")


def test_report_gives_one_object_per_session(dsh_log: Path) -> None:
    run("ingest", str(dsh_log), "--source", "laptop")
    out, _ = run("report", "--by", "session", "--json")
    [row] = json.loads(out)
    assert set(row) == {
        "session_id",
        "parent_session_id",
        "source",
        "format",
        "requests",
        "input_tokens",
        "output_tokens",
        "cache_creation_tokens",
        "cache_read_tokens",
        "models",
        "cost_usd",
        "unpriced_requests",
        "unpriced_models",
    }
    assert (row["session_id"], row["source"], row["format"], row["parent_session_id"]) == (
        "s1",
        "laptop",
        "dsh",
        None,
    )
    # Two assistant replies with usage: 10 + 20 uncached, 0 + 1000 read, 1000 + 1000 written, 5 + 10 output.
    assert (row["requests"], row["input_tokens"], row["cache_read_tokens"]) == (2, 30, 1000)
    assert (row["cache_creation_tokens"], row["output_tokens"]) == (2000, 15)


def test_report_shows_a_cache_sum_no_request_reported_as_unknown() -> None:
    from dashboard.models import Request, Session, Source
    from dashboard.sessions.summaries import session_refresh_summary

    farm = Source.objects.create(name="farm")
    session = Session.objects.create(source=farm, external_id="ds", format="dsh")
    Request.objects.create(session=session, ordinal=0, key="r0", uncached_input_tokens=100, output_tokens=5)
    session_refresh_summary(session)

    out, _ = run("report", "--by", "session")

    assert out.splitlines()[1].split() == ["ds", "1", "100", "5", "—", "—", "no", "price"]


@pytest.mark.parametrize("model", ["deepseek-v4-flash", "deepseek-v4-pro"])
def test_report_gives_every_session_a_numeric_cost_deepseek_v4_included(tmp_path: Path, model: str) -> None:
    from dashboard.costs.pricing import Tokens, price_match, prices_load, usage_cost

    write_dsh_log(tmp_path / "v4" / "session.jsonl", session_id="v4", turns=2, model=model)
    run("ingest", str(tmp_path / "v4"), "--source", "harness")

    [row] = json.loads(run("report", "--by", "session", "--json")[0])

    price = price_match(model=model, prices=prices_load())
    assert price is not None
    # The log's two replies: 30 uncached, 1,000 read, 2,000 written, 15 out; DeepSeek bills a write as a miss.
    expected = usage_cost(tokens=Tokens(30, 1000, 2000, 0, 15), price=price)
    assert row["models"] == [model]
    assert isinstance(row["cost_usd"], float)
    assert row["cost_usd"] == pytest.approx(float(expected), abs=1e-8)
    assert (row["unpriced_requests"], row["unpriced_models"]) == (0, [])


def test_the_report_table_has_a_cost_column_and_marks_a_partial_cost() -> None:
    from dashboard.models import Request, Session, Source
    from dashboard.sessions.summaries import session_refresh_summary

    farm = Source.objects.create(name="farm")
    session = Session.objects.create(source=farm, external_id="mixed", format="dsh")
    for ordinal, model in enumerate(["claude-sonnet-4", "house-model"]):
        Request.objects.create(
            session=session, ordinal=ordinal, key=f"r{ordinal}", model=model, uncached_input_tokens=1_000_000
        )
    session_refresh_summary(session)

    out, _ = run("report", "--by", "session")

    header, line, note = out.splitlines()
    assert header.split()[-2:] == ["cost", "(USD)"]
    assert line.split()[-1] == "3.0000*"  # a million Sonnet 4 input tokens; house-model left out
    assert note == "* partial: no price for house-model"
