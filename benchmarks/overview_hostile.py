"""The overview against hostile times: rows dated 0001, 1970 and 9999 beside current data of a dozen
sources, served by gunicorn on loopback and read by 50 concurrent viewers.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/cachescope python benchmarks/overview_hostile.py \
        [--sources 12] [--sessions 15] [--users 50] [--reads 4] [--web-workers 4]

A scratch database is created on the server of ``DATABASE_URL`` (and dropped afterwards) and
filled through the real ingest: ``--sources`` sources of ``--sessions`` dsh sessions each, spread
over the last 60 days; a source "hostile" whose logs date lines 0001-01-03, 1970-01-01 and
9999-12-29; the real DeepSeek Harness snapshots (times near 1970) under "dsh-real" when
``../shared/data/dsh-real`` is beside the checkout (or ``--dsh-real`` names them); and, as an
ingest stored them before it checked times, requests dated 0001, 1970 and 9999 written straight
to the table with their rollups.
Then gunicorn serves the app and the benchmark prints, for ``/`` (the default range) and
``/?range=all``: the status, the body's size as sent (gzip) and uncompressed, the time of one
viewer reading alone (p50 and p95 of 20 reads: server time on loopback), and p50/p95 while
``--users`` threads each read both pages ``--reads`` times at once. Not part of the test run.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.api import BIN, HOST, _database, _free_port, _start, _wait_for_port, scratch_database  # noqa: E402

SHARED_DSH = ROOT.parent / "shared" / "data" / "dsh-real"
HOSTILE = (
    datetime(1, 1, 3, tzinfo=UTC),
    datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC),
    datetime(9999, 12, 29, tzinfo=UTC),
)
PAGES = {"default": "/", "all": "/?range=all"}
TARGET_MS = 300
TARGET_BYTES = 1_000_000


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sources", type=int, default=12)
    parser.add_argument("--sessions", type=int, default=15, help="Sessions per source.")
    parser.add_argument("--users", type=int, default=50, help="Concurrent viewers.")
    parser.add_argument("--reads", type=int, default=4, help="Reads of each page per viewer.")
    parser.add_argument("--web-workers", type=int, default=4, help="gunicorn worker processes.")
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--dsh-real", type=Path, default=SHARED_DSH, help="The real harness snapshots.")
    args = parser.parse_args()

    server_url, database, env = scratch_database("overview_hostile", data_name="overview-hostile")
    env.pop("CELERY_BROKER_URL")  # follow-ups run in the ingest's own process
    env["CACHESCOPE_DATA_DIR"] = tempfile.mkdtemp(prefix="cachescope-hostile-")
    os.environ.update(env)
    os.environ.pop("CELERY_BROKER_URL", None)
    server: subprocess.Popen[bytes] | None = None
    try:
        subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
        import django

        django.setup()
        cookie = _fill(args)
        port = _free_port()
        command = [
            str(BIN / "gunicorn"),
            "dashboard.wsgi",
            "-b",
            f"{HOST}:{port}",
            "-w",
            str(args.web_workers),
        ]
        server = _start(
            [*command, "--log-level", "warning"], {k: v for k, v in env.items() if k != "CELERY_BROKER_URL"}
        )
        _wait_for_port(port)
        _measure(args, port, cookie)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=20)
        from django.db import connections

        connections.close_all()
        _database(server_url, f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


def _fill(args: argparse.Namespace) -> str:
    """Ingest the fleet and the hostile rows; return a signed-in viewer's session cookie."""
    from django.contrib.auth.models import Group, User
    from django.test import Client
    from django.utils import timezone

    from dashboard.ingest.files import ingest_paths

    rng = random.Random(args.seed)
    now = timezone.now()
    folder = Path(tempfile.mkdtemp(prefix="cachescope-hostile-logs-"))
    started = time.perf_counter()
    for source in range(args.sources):
        root = folder / f"source-{source:02}"
        for number in range(args.sessions):
            begin = now - timedelta(days=rng.uniform(0, 60))
            _write(
                root / f"s{number}" / "session.jsonl",
                f"src{source}-s{number}",
                begin,
                turns=rng.randint(3, 12),
            )
        ingest_paths(paths=[root], source_name=f"source-{source:02}")
    hostile = folder / "hostile"
    for moment in HOSTILE:
        _write(hostile / str(moment.year) / "session.jsonl", f"hostile-{moment.year}", moment, turns=4)
    summary = ingest_paths(paths=[hostile], source_name="hostile")
    example = f", e.g. {summary.notices[0]}" if summary.notices else ""
    print(f"hostile logs ingested: {len(summary.notices)} notices{example}")
    if args.dsh_real.is_dir():
        real = ingest_paths(paths=[args.dsh_real], source_name="dsh-real")
        print(f"dsh-real: {real.sessions_added} sessions, {len(real.notices)} notices")
    _stored_before_the_check()
    print(f"fleet filled in {time.perf_counter() - started:.1f} s")

    user = User.objects.create_user(username="viewer", password="a-long-benchmark-password")
    user.groups.add(Group.objects.get_or_create(name="viewer")[0])
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


def _write(path: Path, session_id: str, begin: datetime, *, turns: int) -> None:
    """A dsh log of ``turns`` user and assistant turns, one minute apart, from ``begin``."""
    start_ms = int(begin.timestamp() * 1000)
    lines: list[dict[str, Any]] = [
        {"type": "session", "version": 4, "id": session_id, "createdAt": start_ms, "cwd": "/srv/app"},
        {
            "type": "system/message",
            "data": {"turn": 0, "step": 0, "message": {"role": "system", "content": "Be terse."}},
        },
    ]
    for turn in range(1, turns + 1):
        lines.append(
            {
                "type": "user/message",
                "data": {
                    "id": f"u{turn}",
                    "role": "user",
                    "content": f"q {turn}",
                    "source": {"kind": "user"},
                },
            }
        )
        usage = {
            "inputTokens": 40 * turn,
            "cacheReadTokens": 900 * (turn - 1),
            "cacheWriteTokens": 300,
            "outputTokens": 20,
        }
        message = {"role": "assistant", "content": [{"type": "text", "text": f"a {turn}"}]}
        lines.append(
            {
                "type": "assistant/message",
                "data": {"turn": turn, "step": 0, "message": message, "usage": usage},
            }
        )
    for seq, line in enumerate(lines[1:]):
        line.update(seq=seq, time=start_ms + seq * 30_000, surfaceOp="append")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _stored_before_the_check() -> None:
    """Requests dated 0001, 1970 and 9999 as an ingest stored them before it checked times."""
    from dashboard.fleet.rollups import rollups_rebuild
    from dashboard.models import Request, Session, Source

    source, _ = Source.objects.get_or_create(name="stored-before")
    for moment in HOSTILE:
        session = Session.objects.create(
            source=source,
            external_id=f"old-{moment.year}",
            format="dsh",
            started_at=moment,
            last_activity=moment,
        )
        Request.objects.create(
            session=session, ordinal=0, key="r0", provider="anthropic", model="claude-sonnet-4",
            started_at=moment, uncached_input_tokens=50, cache_read_tokens=0, output_tokens=5,
        )  # fmt: skip
    rollups_rebuild()


def _get(port: int, path: str, cookie: str, *, gzip: bool = True) -> tuple[int, float, int]:
    """One read: its status, seconds and body bytes as sent."""
    headers = {"Cookie": cookie, **({"Accept-Encoding": "gzip"} if gzip else {})}
    conn = http.client.HTTPConnection(HOST, port, timeout=300)
    began = time.perf_counter()
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    return response.status, time.perf_counter() - began, len(body)


def _percentiles(seconds: list[float]) -> str:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]
    return f"p50 {statistics.median(ordered) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms"


def _measure(args: argparse.Namespace, port: int, cookie: str) -> None:
    for _ in range(args.web_workers * 2):  # every worker warm
        for path in PAGES.values():
            _get(port, path, cookie)
    for name, path in PAGES.items():
        status, _, sent = _get(port, path, cookie)
        _, _, plain = _get(port, path, cookie, gzip=False)
        alone = [_get(port, path, cookie)[1] for _ in range(20)]
        verdict = (
            "ok"
            if status == 200 and plain < TARGET_BYTES and sorted(alone)[18] * 1000 < TARGET_MS
            else "OVER"
        )
        sizes = f"{sent / 1e3:7.1f} kB gzip, {plain / 1e3:7.1f} kB plain"
        print(f"{name:8} {path:14} {status}  {sizes}; alone {_percentiles(alone)}  [{verdict}]")

    def viewer(_: int) -> list[tuple[str, int, float]]:
        reads = []
        for _ in range(args.reads):
            for name, path in PAGES.items():
                status, seconds, _ = _get(port, path, cookie)
                reads.append((name, status, seconds))
        return reads

    began = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.users) as pool:
        reads = [read for batch in pool.map(viewer, range(args.users)) for read in batch]
    wall = time.perf_counter() - began
    workers = f"{args.web_workers} gunicorn workers"
    print(f"{args.users} viewers x {args.reads} reads of each page, {workers}, {wall:.1f} s:")
    for name in PAGES:
        mine = [read for read in reads if read[0] == name]
        failed = sum(1 for read in mine if read[1] != 200)
        print(f"  {name:8} {_percentiles([read[2] for read in mine])}, {failed} not 200")


if __name__ == "__main__":
    main()
