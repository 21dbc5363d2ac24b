"""Soak: 8 API clients for 10 minutes while a re-fold runs, then a consistency check of the whole store.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/cachescope python benchmarks/soak.py \
        [--clients 8] [--duration 600] [--seed-sessions 40]

A scratch database is created on the server of ``DATABASE_URL`` (dropped afterwards), migrated and
given an API token; gunicorn serves the app and a Celery worker takes ingest follow-ups and the
re-fold from Redis (``CELERY_BROKER_URL``, default redis://127.0.0.1:6379/14). Seed sessions are
stored, a contextBreakdown v7 → v8 re-fold is enqueued, and ``--clients`` threads then grow their own
sessions batch by batch (every fifth batch resends one already accepted, to exercise idempotency).

Printed: throughput (events/s, batches/s), p50/p95/max latency, errors, and the consistency check:
every accepted event stored exactly once (and nothing stored that was not accepted), and every
session's live projection rows equal to a fresh fold of its stored log. Exits 1 if the check fails.
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.api import (  # noqa: E402
    BIN,
    HOST,
    _database,
    _free_port,
    _start,
    _token,
    _wait_for_port,
    scratch_database,
)

BASE_MS = 1_767_225_600_000
EVENTS_PER_BATCH = 40


@dataclass
class Tally:
    """What the clients saw; shared by the threads under a lock."""

    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    accepted: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))
    events_sent: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _header(session_id: str) -> dict[str, Any]:
    return {"type": "session", "version": 4, "id": session_id, "createdAt": "2026-01-01T00:00:00Z"}


def _event(seq: int) -> dict[str, Any]:
    """Event ``seq`` of a soak session: a system prompt, then user/assistant pairs with usage."""
    time_ms = BASE_MS + seq * 1000
    if seq == 0:
        message = {"role": "system", "content": "You are terse."}
        return {"type": "system/message", "seq": 0, "time": time_ms, "surfaceOp": "append",
                "data": {"turn": 0, "step": 0, "message": message}}  # fmt: skip
    turn = (seq + 1) // 2
    if seq % 2:
        data = {
            "id": f"u{turn}",
            "role": "user",
            "content": f"question {turn} " * 20,
            "source": {"kind": "user"},
        }
        return {"type": "user/message", "seq": seq, "time": time_ms, "surfaceOp": "append", "data": data}
    usage = {"inputTokens": 50, "cacheReadTokens": 1000 * turn, "cacheWriteTokens": 200, "outputTokens": 30}
    message = {"role": "assistant", "content": [{"type": "text", "text": f"answer {turn} " * 30}]}
    return {"type": "assistant/message", "seq": seq, "time": time_ms, "surfaceOp": "append",
            "data": {"turn": turn, "step": 0, "message": message, "usage": usage}}  # fmt: skip


def _body(session_id: str, first: int, count: int) -> bytes:
    rows = [_header(session_id), *(_event(seq) for seq in range(first, first + count))]
    return gzip.compress("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows).encode(), 5)


def _post(port: int, secret: str, body: bytes) -> tuple[int, dict[str, Any]]:
    headers = {
        "Authorization": f"Bearer {secret}",
        "Content-Type": "application/x-ndjson",
        "Content-Encoding": "gzip",
    }
    conn = http.client.HTTPConnection(HOST, port, timeout=120)
    try:
        conn.request("POST", "/api/v1/ingest", body=body, headers=headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        conn.close()


def _client(index: int, port: int, secret: str, deadline: float, tally: Tally) -> None:
    chance = random.Random(index)
    sessions: dict[str, int] = {}  # session id -> next seq to send
    batch = 0
    while time.monotonic() < deadline:
        batch += 1
        sent = [sid for sid, next_seq in sessions.items() if next_seq > 0]
        if sent and batch % 5 == 0:
            # Resend part of a session already accepted (a header alone would be a new, empty session).
            session_id = chance.choice(sent)
            first = chance.randrange(0, max(1, sessions[session_id] - EVENTS_PER_BATCH + 1))
            count = min(EVENTS_PER_BATCH, sessions[session_id] - first)
        else:
            if not sessions or chance.random() < 0.2:
                sessions[f"soak-{index}-{len(sessions)}"] = 0
            session_id = chance.choice(list(sessions))
            first, count = sessions[session_id], EVENTS_PER_BATCH
        started = time.perf_counter()
        try:
            status, answer = _post(port, secret, _body(session_id, first, count))
        except (OSError, http.client.HTTPException, ValueError) as error:
            with tally.lock:
                tally.errors.append(f"{session_id} seq {first}: {type(error).__name__}: {error}")
            continue
        elapsed = time.perf_counter() - started
        with tally.lock:
            tally.latencies.append(elapsed)
            tally.events_sent += count
            if status in (200, 202) and not answer.get("errors"):
                tally.accepted[session_id].update(range(first, first + count))
                sessions[session_id] = max(sessions[session_id], first + count)
            else:
                tally.errors.append(f"{session_id} seq {first}: HTTP {status}: {str(answer)[:200]}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--duration", type=float, default=600, help="Seconds of load.")
    parser.add_argument("--seed-sessions", type=int, default=40, help="Sessions stored before the re-fold.")
    parser.add_argument("--web-workers", type=int, default=4)
    parser.add_argument("--keep-database", action="store_true", help="Leave the scratch database for a look.")
    args = parser.parse_args()

    server_url, database, env = scratch_database("soak", data_name="soak")
    processes: list[subprocess.Popen[bytes]] = []
    try:
        subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
        secret = _token(env)
        port = _free_port()
        worker = [str(BIN / "celery"), "-A", "dashboard", "worker", "-Q", "ingest,fold,refold,default"]
        processes.append(_start([*worker, "-c", "2", "--loglevel", "WARNING"], env))
        web = [str(BIN / "gunicorn"), "dashboard.wsgi", "-b", f"{HOST}:{port}", "-w", str(args.web_workers)]
        processes.append(_start([*web, "--log-level", "warning"], env))
        _wait_for_port(port)
        ok = _soak(args, env, port, secret)
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
        if args.keep_database:
            print(f"kept           {env['DATABASE_URL']}")
        else:
            _database(server_url, f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
    sys.exit(0 if ok else 1)


def _soak(args: argparse.Namespace, env: dict[str, str], port: int, secret: str) -> bool:
    tally = Tally()
    for n in range(args.seed_sessions):
        session_id = f"seed-{n}"
        status, answer = _post(port, secret, _body(session_id, 0, 200))
        if status not in (200, 202) or answer.get("errors"):
            sys.exit(f"seeding failed: HTTP {status}: {answer}")
        tally.accepted[session_id].update(range(200))
    refold = [sys.executable, "manage.py", "refold", "--key", "contextBreakdown", "--from", "7", "--to", "8"]
    subprocess.run([*refold, "--async"], cwd=ROOT, env=env, check=True, capture_output=True)
    print(f"seeded {args.seed_sessions} sessions; re-fold enqueued")
    print(f"load           {args.clients} clients for {args.duration:.0f} s")

    started = time.monotonic()
    deadline = started + args.duration
    with ThreadPoolExecutor(args.clients) as pool:
        for index in range(args.clients):
            pool.submit(_client, index, port, secret, deadline, tally)
    wall = time.monotonic() - started

    latencies = sorted(tally.latencies)
    p95 = latencies[int(0.95 * (len(latencies) - 1))] if latencies else 0.0
    print(f"batches        {len(latencies)} in {wall:.1f} s ({len(latencies) / wall:.1f}/s)")
    print(f"events sent    {tally.events_sent} ({tally.events_sent / wall:.0f}/s)")
    if latencies:
        print(f"latency        p50 {statistics.median(latencies) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, "
              f"max {latencies[-1] * 1000:.0f} ms")  # fmt: skip
    print(f"errors         {len(tally.errors)}")
    for line in tally.errors[:10]:
        print(f"  {line}")

    os.environ.update(env)
    import django

    django.setup()
    _wait_for_quiet()
    return _consistent(tally) and not tally.errors


def _wait_for_quiet(timeout: float = 600) -> None:
    """Wait until the re-fold has finished and the follow-up folds have caught up with the logs."""
    from dashboard.models import FoldRun

    deadline = time.monotonic() + timeout
    reported = 0.0
    while time.monotonic() < deadline:
        unfinished = FoldRun.objects.exclude(status__in=("done", "failed"))
        running = len(unfinished)
        lagging = _lagging()
        if not running and not lagging:
            return
        if time.monotonic() - reported > 10:
            runs = ", ".join(
                f"run {r.pk} {r.status} {r.sessions_done}/{r.sessions_total}" for r in unfinished
            )
            print(f"waiting        re-fold: {runs or 'done'}; {lagging} sessions not folded to their end")
            reported = time.monotonic()
        time.sleep(2)
    print("warning: the workers had not caught up when the check began")


def _lagging() -> int:
    from django.db.models import Max

    from dashboard.models import Event, ProjectionRow

    last = dict(
        Event.objects.values("session_id").annotate(last=Max("seq")).values_list("session_id", "last")
    )
    folded: dict[int, int] = defaultdict(lambda: -1)
    for session_id, seq in ProjectionRow.objects.values_list("session_id", "seq"):
        folded[session_id] = max(folded[session_id], seq if seq is not None else -1)
    return sum(1 for session_id, seq in last.items() if folded[session_id] < seq)


def _consistent(tally: Tally) -> bool:
    from django.db.models import Count

    from dashboard.models import Event, ProjectionRow, Session
    from dashboard.refold.folds import Track, _live_rows, drain, fold_tracks, session_records
    from projections.folds.registry import live_projections

    problems: list[str] = []
    stored: dict[str, set[int]] = defaultdict(set)
    for external_id, seq in Event.objects.values_list("session__external_id", "seq").iterator():
        stored[external_id].add(seq)
    doubled = Event.objects.values("session_id", "seq").annotate(n=Count("id")).filter(n__gt=1).count()
    if doubled:
        problems.append(f"{doubled} events stored more than once")
    for session_id, seqs in tally.accepted.items():
        if stored.get(session_id, set()) != seqs:
            lost = sorted(seqs - stored.get(session_id, set()))[:5]
            extra = sorted(stored.get(session_id, set()) - seqs)[:5]
            problems.append(f"{session_id}: lost {lost} extra {extra}")
    unknown = set(stored) - set(tally.accepted)
    if unknown:
        problems.append(f"sessions stored but never accepted: {sorted(unknown)[:5]}")

    empty = list(Session.objects.filter(event_count=0).values_list("external_id", flat=True)[:5])
    if empty:
        # A session row without a single event is a half-stored body: the API stores sessions whole.
        problems.append(f"sessions stored without events: {empty}")

    mismatched = 0
    sessions = Session.objects.filter(event_count__gt=0).only("id", "external_id")
    for session in sessions:
        tracks = [Track.start(projection) for projection in live_projections()]
        drain(fold_tracks(tracks, session_records(session_id=session.pk)))
        rows = {row.key: row for row in ProjectionRow.objects.filter(_live_rows(), session_id=session.pk)}
        for track in tracks:
            row = rows.get(track.key)
            if row is None or row.seq != track.seq or row.view != track.view_json:
                mismatched += 1
                if mismatched <= 5:
                    where = "missing" if row is None else f"row seq {row.seq}, fresh seq {track.seq}"
                    problems.append(f"{session.external_id} {track.key} v{track.ver}: {where}")
    accepted = sum(len(seqs) for seqs in tally.accepted.values())
    print(f"consistency    {accepted} accepted events in {len(tally.accepted)} sessions")
    print(f"consistency    {sessions.count()} sessions' rows compared with a fresh fold; {mismatched} differ")
    for problem in problems:
        print(f"  {problem}")
    print("consistency    OK" if not problems else "consistency    FAILED")
    return not problems


if __name__ == "__main__":
    main()
