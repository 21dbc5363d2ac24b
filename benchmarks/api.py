"""Ingestion API throughput: gunicorn and a Celery worker on Redis, against PostgreSQL, on loopback.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/cachescope python benchmarks/api.py \
        [--batches 60] [--sessions 4] [--events 500] [--clients 2] [--gzip]

A scratch database is created on the server of ``DATABASE_URL`` (and dropped afterwards), migrated,
and given a source with an API token. Then gunicorn serves the app on 127.0.0.1 and a Celery worker
takes the follow-up folds from Redis (``CELERY_BROKER_URL``, default redis://127.0.0.1:6379/14).
Generated NDJSON batches (``--sessions`` dsh sessions of ``--events`` events each) are POSTed by
``--clients`` threads; it prints events/s over the wall time and the p50/p95 latency per batch.
Bounded: at most ``--batches`` requests and ``--timeout`` seconds. Not part of the test run.
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
HOST = "127.0.0.1"
BASE_MS = 1_767_225_600_000


def scratch_database(label: str, *, data_name: str) -> tuple[str, str, dict[str, str]]:
    """Create a scratch database on the server ``DATABASE_URL`` names; return the server URL, the
    database's name and the environment the app's processes run with against it."""
    server_url = os.environ.get("DATABASE_URL", "")
    if not server_url.startswith(("postgres://", "postgresql://")):
        sys.exit("set DATABASE_URL to a PostgreSQL URL; a scratch database is created on its server")
    database = f"cachescope_{label}_{os.getpid()}"
    env = {
        **os.environ,
        "DATABASE_URL": server_url.rsplit("/", 1)[0] + "/" + database,
        "CELERY_BROKER_URL": os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/14"),
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "CACHESCOPE_DATA_DIR": str(ROOT / "data" / data_name),
        "LOG_LEVEL": "ERROR",
    }
    _database(server_url, f"CREATE DATABASE {database}")
    return server_url, database, env


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batches", type=int, default=60)
    parser.add_argument("--sessions", type=int, default=4, help="Sessions per batch.")
    parser.add_argument("--events", type=int, default=500, help="Events per session.")
    parser.add_argument("--clients", type=int, default=2, help="Concurrent client threads.")
    parser.add_argument("--web-workers", type=int, default=2, help="gunicorn worker processes.")
    parser.add_argument("--gzip", action="store_true", help="Send gzip-compressed bodies.")
    parser.add_argument("--timeout", type=float, default=300, help="Stop sending after this many seconds.")
    args = parser.parse_args()

    server_url, database, env = scratch_database("api_bench", data_name="api-bench")
    processes: list[subprocess.Popen[bytes]] = []
    try:
        subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
        secret = _token(env)
        port = _free_port()
        processes.append(
            _start(
                [
                    str(BIN / "celery"),
                    "-A",
                    "dashboard",
                    "worker",
                    "-Q",
                    "ingest,fold,refold,default",
                    "-c",
                    "1",
                    "--loglevel",
                    "WARNING",
                ],
                env,
            )
        )
        processes.append(
            _start(
                [
                    str(BIN / "gunicorn"),
                    "dashboard.wsgi",
                    "-b",
                    f"{HOST}:{port}",
                    "-w",
                    str(args.web_workers),
                    "--log-level",
                    "warning",
                ],
                env,
            )
        )
        _wait_for_port(port)
        _run(args, port, secret)
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
        _database(server_url, f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


def _database(server_url: str, statement: str) -> None:
    import psycopg

    with psycopg.connect(server_url, autocommit=True, connect_timeout=5) as conn:
        conn.execute(statement)  # type: ignore[arg-type]


def _token(env: dict[str, str]) -> str:
    code = (
        "from dashboard.models import Source; from dashboard.access.tokens import token_create; "
        "source, _ = Source.objects.get_or_create(name='bench'); "
        "print(token_create(source=source, name='bench', created_by=None)[1])"
    )
    out = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip().splitlines()[-1]


def _start(command: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(command, cwd=ROOT, env=env)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def _wait_for_port(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((HOST, port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"gunicorn did not listen on {HOST}:{port} within {timeout:.0f} s")


def _session_lines(session_id: str, events: int) -> list[dict[str, Any]]:
    """A dsh session: a system prompt, then user, assistant and tool events in turns."""
    lines: list[dict[str, Any]] = [
        {
            "type": "session",
            "version": 4,
            "id": session_id,
            "createdAt": "2026-01-01T00:00:00Z",
            "cwd": "/srv/app",
        }
    ]
    for seq in range(events):
        if seq == 0:
            kind, data = (
                "system/message",
                {"turn": 0, "step": 0, "message": {"role": "system", "content": "Be terse."}},
            )
        elif seq % 3 == 1:
            kind, data = (
                "user/message",
                {
                    "id": f"u{seq}",
                    "role": "user",
                    "content": f"question {seq} " * 8,
                    "source": {"kind": "user"},
                },
            )
        elif seq % 3 == 2:
            kind, data = (
                "assistant/message",
                {
                    "turn": seq,
                    "step": 0,
                    "message": {
                        "role": "assistant",
                        "content": [{"type": "text", "text": f"answer {seq} " * 12}],
                    },
                    "usage": {
                        "inputTokens": 40,
                        "cacheReadTokens": 100 * seq,
                        "cacheWriteTokens": 120,
                        "outputTokens": 30,
                    },
                },
            )
        else:
            kind, data = "turn/end", {"turn": seq}
        line = {"type": kind, "seq": seq, "time": BASE_MS + seq * 250, "data": data}
        if kind.endswith("/message"):
            line["surfaceOp"] = "append"
        lines.append(line)
    return lines


def _batch(sessions: int, events: int, compress: bool) -> bytes:
    lines = [line for _ in range(sessions) for line in _session_lines(uuid.uuid4().hex, events)]
    body = "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines).encode()
    return gzip.compress(body, 5) if compress else body


def _post(port: int, secret: str, body: bytes, compressed: bool) -> tuple[float, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/x-ndjson"}
    if compressed:
        headers["Content-Encoding"] = "gzip"
    conn = http.client.HTTPConnection(HOST, port, timeout=120)
    started = time.perf_counter()
    try:
        conn.request("POST", "/api/v1/ingest", body=body, headers=headers)
        response = conn.getresponse()
        answer = json.loads(response.read())
    finally:
        conn.close()
    elapsed = time.perf_counter() - started
    if response.status not in (200, 202):
        raise SystemExit(f"HTTP {response.status}: {answer}")
    return elapsed, answer


def _run(args: argparse.Namespace, port: int, secret: str) -> None:
    bodies = [_batch(args.sessions, args.events, args.gzip) for _ in range(args.batches)]
    size = sum(len(b) for b in bodies) / len(bodies)
    print(
        f"{args.batches} batches of {args.sessions} sessions x {args.events} events "
        f"({size / 1e6:.2f} MB{' gzip' if args.gzip else ''} each), {args.clients} clients, "
        f"{args.web_workers} gunicorn workers"
    )
    _post(port, secret, _batch(1, 10, args.gzip), args.gzip)  # warm both web workers' connections
    deadline = time.monotonic() + args.timeout
    latencies: list[float] = []
    accepted = errors = 0
    started = time.perf_counter()

    def send(body: bytes) -> tuple[float, dict[str, Any]] | None:
        if time.monotonic() > deadline:
            return None
        return _post(port, secret, body, args.gzip)

    with ThreadPoolExecutor(max_workers=args.clients) as pool:
        for result in pool.map(send, bodies):
            if result is None:
                continue
            latency, answer = result
            latencies.append(latency)
            accepted += answer["accepted"]
            errors += len(answer["errors"])
    wall = time.perf_counter() - started
    latencies.sort()
    p95 = latencies[min(len(latencies) - 1, max(0, round(0.95 * len(latencies)) - 1))]
    print(
        f"sent {len(latencies)} batches in {wall:.2f} s: {accepted:,} events accepted, {errors} line errors"
    )
    print(f"throughput: {accepted / wall:,.0f} events/s")
    print(
        f"latency per batch: p50 {statistics.median(latencies) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, "
        f"max {latencies[-1] * 1000:.0f} ms"
    )


if __name__ == "__main__":
    main()
