"""The rest of the fleet the page benchmark (``benchmarks/listing.py``) measures, beside its sessions:
each session's stored projection rows, a history of ingest jobs (one with many bad lines), re-fold
runs (one over every session), API tokens. Loaded with COPY after the sessions, so the pages that list
these read tables of the size a fleet's would have.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from benchmarks.fleet_clock import EPOCH

INGEST_JOBS = 20_000
JOB_ERRORS = 5_000
FOLD_RUNS = 40
API_TOKENS = 60
# The projections every folded session keeps a row of, with their live state versions.
PROJECTIONS = (("tokenUsage", 1), ("contextPressure", 2), ("cacheMetrics", 1), ("contextBreakdown", 8))


def load_extras(raw: Any, rng: random.Random, session_ids: list[int], source_ids: list[int]) -> None:
    """Load everything but sessions, requests, events and warnings, through ``raw`` (psycopg's cursor)."""
    _projection_rows(raw, session_ids)
    _ingest_jobs(raw, rng, source_ids)
    _fold_runs(raw, rng, session_ids)
    _api_tokens(raw, rng, source_ids)


def _projection_rows(raw: Any, session_ids: list[int]) -> None:
    columns = "session_id, key, ver, seq, val, view, state_bytes, error, updated_at"
    stamp = EPOCH.isoformat()
    with raw.copy(f"COPY dashboard_projectionrow ({columns}) FROM STDIN") as copy:
        batch: list[str] = []
        for session_id in session_ids:
            for key, ver in PROJECTIONS:
                val = '{"input": 1200, "output": 300}'
                batch.append(f"{session_id}\t{key}\t{ver}\t40\t{val}\t{val}\t31\t\t{stamp}\n")
            if len(batch) >= 20_000:
                copy.write("".join(batch))
                batch.clear()
        copy.write("".join(batch))


def _ingest_jobs(raw: Any, rng: random.Random, source_ids: list[int]) -> None:
    columns = (
        "kind, status, label, source_name, format, paths, created_at, started_at, finished_at, "
        "claimed_by, bytes_total, bytes_done, sessions_added, sessions_updated, events_added, "
        "requests_added, duplicates, error_count, notice_count, message"
    )
    with raw.copy(f"COPY dashboard_ingestjob ({columns}) FROM STDIN") as copy:
        for index in range(INGEST_JOBS):
            created = EPOCH - timedelta(minutes=(INGEST_JOBS - index) * 6)
            size = rng.randint(10_000, 50_000_000)
            errors = JOB_ERRORS if index == INGEST_JOBS - 2 else rng.choice((0, 0, 0, 0, 2))
            copy.write_row(
                (
                    rng.choice(("api", "api", "command", "upload")), "done", f"batch {index}.jsonl",
                    f"source-{rng.choice(source_ids)}", "", '["batch.jsonl"]', created, created,
                    created + timedelta(seconds=rng.uniform(1, 60)), "", size, size, rng.randint(1, 20),
                    0, rng.randint(100, 5_000), rng.randint(10, 500), 0, errors, 0, "",
                )
            )  # fmt: skip
    raw.execute("SELECT id, error_count FROM dashboard_ingestjob WHERE error_count > 0")
    failing = raw.fetchall()
    with raw.copy("COPY dashboard_ingesterror (job_id, path, line, field, reason) FROM STDIN") as copy:
        for job_id, count in failing:
            for line in range(count):
                copy.write_row((job_id, "batch.jsonl", line + 1, "usage.input_tokens", "not a number"))


def _fold_runs(raw: Any, rng: random.Random, session_ids: list[int]) -> None:
    columns = (
        "key, from_version, to_version, session_ids, status, claimed_by, message, sessions_total, "
        "sessions_done, events, identical, diverged, errored, from_state_bytes, to_state_bytes, "
        "fold_seconds, created_at, started_at, finished_at"
    )
    with raw.copy(f"COPY dashboard_foldrun ({columns}) FROM STDIN") as copy:
        for index in range(FOLD_RUNS):
            created = EPOCH - timedelta(days=FOLD_RUNS - index)
            total = len(session_ids)
            copy.write_row(
                (
                    "contextBreakdown", 7, 8, None, "done", "", "", total, total, 10_000_000,
                    total - 30, 30, 0, 4_000_000, 3_000_000, 900.0, created, created, created,
                )
            )  # fmt: skip
    raw.execute("SELECT max(id) FROM dashboard_foldrun")
    (last_run,) = raw.fetchone()
    columns = (
        "run_id, session_id, status, events, divergent_type, error, from_state_bytes, to_state_bytes, seconds"
    )
    with raw.copy(f"COPY dashboard_foldrunresult ({columns}) FROM STDIN") as copy:
        diverged = set(rng.sample(session_ids, min(30, len(session_ids))))
        for session_id in session_ids:
            status = "diverged" if session_id in diverged else "identical"
            kind = "compact/done" if status == "diverged" else ""
            copy.write_row((last_run, session_id, status, 100, kind, "", 40, 31, 0.01))


def _api_tokens(raw: Any, rng: random.Random, source_ids: list[int]) -> None:
    columns = "source_id, name, prefix, hash, created_at, last_used_at"
    with raw.copy(f"COPY dashboard_apitoken ({columns}) FROM STDIN") as copy:
        for index in range(API_TOKENS):
            secret = f"{rng.getrandbits(256):064x}"
            at = EPOCH - timedelta(days=index)
            copy.write_row((rng.choice(source_ids), f"host-{index}", secret[:12], secret, at, at))
