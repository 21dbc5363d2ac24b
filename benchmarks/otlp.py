"""OTLP receiver throughput: Claude Code-shaped log exports POSTed to /v1/logs in-process.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/cachescope_bench python benchmarks/otlp.py \
        [--sessions 20] [--calls 200] [--json] [--gzip]

Runs the app in this process (Django's test client, no HTTP server) against the database of
``DATABASE_URL`` (SQLite in a scratch data folder without it), migrated first. Without
``CELERY_BROKER_URL`` the follow-up folds and analyses run inline on commit, as in the embedded
mode, so the first POST's time includes analysing every session. It prints the time of the first
POST (everything new), of the same POST again (an exporter's retry: everything a duplicate) and the
records per second of each. The source it creates is deleted at the end. Not part of the test run.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
os.environ.setdefault("CACHESCOPE_DATA_DIR", tempfile.mkdtemp(prefix="cachescope-otlp-bench-"))
os.environ.setdefault("LOG_LEVEL", "ERROR")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--json", action="store_true", help="send OTLP/JSON instead of protobuf")
    parser.add_argument("--gzip", action="store_true")
    parser.add_argument(
        "--store-only", action="store_true", help="enqueue no fold or analysis: time the receiver alone"
    )
    args = parser.parse_args()

    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    from dashboard.access.tokens import token_create
    from dashboard.ingest import followups
    from dashboard.ingest.otlp.body import otlp_request_dict
    from dashboard.models import Source
    from tests.dashboard.otlp_payloads import api_request, logs_json, logs_request

    if args.store_only:
        followups._followups()  # import the modules that register them, then forget them all
        followups._FOLLOWUPS = []
    call_command("migrate", verbosity=0)
    source = Source.objects.create(name=f"otlp-bench-{uuid.uuid4().hex[:8]}")
    _token, secret = token_create(source=source, name="bench", created_by=None)
    events = []
    for _ in range(args.sessions):
        session = f"bench-{uuid.uuid4()}"
        read = 0
        for c in range(args.calls):
            write = 800 + (c % 7) * 100
            events.append(
                api_request(
                    c * 5 % 3600,
                    c,
                    f"req_{session}_{c}",
                    session=session,
                    cache_read_tokens=read,
                    cache_creation_tokens=write,
                )
            )
            read += write
    if args.json:
        body, content_type = json.dumps(logs_json(events)).encode(), "application/json"
    else:
        body, content_type = logs_request(events).SerializeToString(), "application/x-protobuf"
    headers = {"Authorization": f"Bearer {secret}"}
    if args.gzip:
        body = gzip.compress(body)
        headers["Content-Encoding"] = "gzip"
    print(
        f"{len(events)} api_request events in {args.sessions} sessions, {len(body):,} bytes {content_type}"
        f"{' gzip' if args.gzip else ''}, database {os.environ.get('DATABASE_URL', 'SQLite')[:40]}"
    )
    if not args.gzip:
        started = time.perf_counter()
        otlp_request_dict(body, signal="logs", encoding="json" if args.json else "protobuf")
        print(f"decode alone: {time.perf_counter() - started:.2f} s")
    client = Client()
    try:
        for label in ("first POST (all new)", "same POST again (all duplicates)"):
            started = time.perf_counter()
            response = client.post("/v1/logs", data=body, content_type=content_type, headers=headers)
            elapsed = time.perf_counter() - started
            assert response.status_code == 200, response.content[:200]
            print(f"{label}: {elapsed:.2f} s, {len(events) / elapsed:,.0f} records/s")
        stored = source.sessions.values_list("request_count", flat=True)
        assert sum(stored) == len(events), (sum(stored), len(events))
    finally:
        source.delete()


if __name__ == "__main__":
    main()
