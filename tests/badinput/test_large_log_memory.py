"""A large log is read and stored in memory that does not grow with it.

A claude-trace log whose every call resends the whole conversation so far (as Claude Code does) is
the shape that grows fastest: each line is larger than the one before, and all of them together are
far larger than any one. It is ingested in a fresh interpreter on the embedded SQLite database after
a small warm-up log (so imports and caches are not counted), with the session's folds and analyses
queued for a worker as with a broker; ``tracemalloc``'s peak over the ingest must stay a small
fraction of the file, which holding the file's lines, its parsed bodies or the session's request
rows at once would exceed.

The session's analysis then runs in the same interpreter, measured the same way: it reads each
request's units, rebuilds its body and renders it, and holds a few renderings at a time (those a
later request can continue). Its peak stays a fraction of the file too, which holding the
session's rows with their units, or its renderings, all at once would exceed several times over.
(Time and resident size over a 500 MB log are measured by ``benchmarks/large_log.py``.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
CALLS = 300
TURN_BYTES = 500
WARM_UP_CALLS = 5

_INGEST = """
import json, os, sys, tracemalloc
from pathlib import Path
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from dashboard.models import Request, RequestAnalysis, Session
import dashboard.ingest.followups as followups
import dashboard.ingest.files as ingest
from dashboard.analysis.stored_sessions import session_analyse
# Queued for a worker, as with a broker: the folds and analyses do not run in this process.
followups._FOLLOWUP_MODULES.clear()
followups._FOLLOWUPS.clear()
ingest.ingest_paths(paths=[Path(sys.argv[2])], source_name="warm-up", format="claude-trace")
session_analyse(session_id=Session.objects.get(source__name="warm-up").pk)
tracemalloc.start()
summary = ingest.ingest_paths(paths=[Path(sys.argv[1])], source_name="large", format="claude-trace")
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
large = Session.objects.get(source__name="large")
tracemalloc.start()
analysed = session_analyse(session_id=large.pk)
analysis_peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
stored = RequestAnalysis.objects.filter(session=large)
print(json.dumps({
    "requests": Request.objects.count(), "errors": [str(e) for e in summary.errors], "peak": peak,
    "analysed": stored.count(), "compared": stored.exclude(data__previous=None).count(),
    "findings": [f.kind for f in analysed.findings], "analysis_peak": analysis_peak,
}))
"""


def write_growing_trace_log(path: Path, *, calls: int, turn_bytes: int) -> Path:
    """A claude-trace log of ``calls`` main calls; each sends the history so far plus one more turn."""
    history: list[dict[str, object]] = []
    with path.open("w", encoding="utf-8") as out:
        for call in range(calls):
            words = f"step {call} reads the file and runs the tests " * (turn_bytes // 45)
            history.append({"role": "user", "content": [{"type": "text", "text": words}]})
            started = 1_767_225_600 + call * 30
            record = {
                "request": {
                    "timestamp": started,
                    "method": "POST",
                    "url": "https://api.anthropic.com/v1/messages",
                    "headers": {
                        "anthropic-version": "2023-06-01",
                        "User-Agent": "claude-cli/1.0.6 (external, cli)",
                    },
                    "body": {
                        "model": "claude-sonnet-4-20250514",
                        "max_tokens": 1024,
                        "system": [{"type": "text", "text": "You are a coding agent."}],
                        "tools": [{"name": "bash", "input_schema": {"type": "object"}}],
                        "messages": history,
                    },
                },
                "response": {
                    "timestamp": started + 3,
                    "status_code": 200,
                    "headers": {"request-id": f"req_{call:06d}"},
                    "body": {
                        "id": f"msg_{call:06d}",
                        "type": "message",
                        "role": "assistant",
                        "model": "claude-sonnet-4-20250514",
                        "content": [{"type": "text", "text": f"done {call}"}],
                        "stop_reason": "end_turn",
                        "usage": {
                            "input_tokens": 10,
                            "cache_read_input_tokens": call * 500,
                            "cache_creation_input_tokens": 500,
                            "output_tokens": 20,
                        },
                    },
                },
                "logged_at": "2026-01-01T00:00:00.000Z",
            }
            out.write(json.dumps(record) + "\n")
            history.append({"role": "assistant", "content": [{"type": "text", "text": f"done {call}"}]})
    return path


def test_a_large_growing_trace_is_ingested_in_memory_far_below_its_size(tmp_path: Path) -> None:
    if connection.vendor != "sqlite":
        # The ingest runs on the embedded SQLite database whatever the suite's: once is enough.
        pytest.skip("the same SQLite ingest runs in the suite's SQLite pass")
    path = write_growing_trace_log(tmp_path / "log-large.jsonl", calls=CALLS, turn_bytes=TURN_BYTES)
    warm_up = write_growing_trace_log(
        tmp_path / "log-warm-up.jsonl", calls=WARM_UP_CALLS, turn_bytes=TURN_BYTES
    )
    size = path.stat().st_size
    with path.open("rb") as lines:
        largest = max(len(line) for line in lines)
    assert size > 20_000_000
    env = {
        **os.environ,
        "CACHESCOPE_DATA_DIR": str(tmp_path / "data"),
        "DATABASE_URL": "",
        "CELERY_BROKER_URL": "",
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
    }
    done = subprocess.run(
        [sys.executable, "-c", _INGEST, str(path), str(warm_up)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        check=True,
        timeout=900,
    )
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["errors"] == []
    assert result["requests"] == CALLS + WARM_UP_CALLS
    # Constant in the file: a few of its largest lines at a time, never the file or the session.
    print(f"file {size:,} B, largest line {largest:,} B, peak {result['peak']:,} B")
    assert result["peak"] < size / 4
    # Every request analysed, each after the first compared with the one it continues ...
    assert (result["analysed"], result["compared"]) == (CALLS, CALLS - 1)
    assert "ingest-error" not in result["findings"]
    # ... holding a few requests' units and renderings at a time, never the session's: about a
    # quarter of the file here, where holding every row's units and rendering came to 3.3 times it.
    print(f"analysis peak {result['analysis_peak']:,} B")
    assert result["analysis_peak"] < size / 2
