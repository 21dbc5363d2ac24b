"""The fleet the page benchmark (``benchmarks/listing.py``) measures, in a scratch database.

The scratch PostgreSQL database is created here, labelled with the figures it was built to once it
is loaded (so a later run reuses it), and dropped on request. A long dsh log goes through the real
ingest, so one session page has 2,000 analysed requests; the rest of the fleet is loaded with COPY:
sessions over several sources, models and hit rates, some with warnings, their requests and their
events, a few sessions with 2,000 requests.
"""

from __future__ import annotations

import argparse
import functools
import math
import random
import re
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from benchmarks.fleet_clock import EPOCH
from benchmarks.fleet_extras import load_extras
from projections.hit_rate import hit_rate

HEAVY_REQUESTS = 2_000

SOURCES = (
    ("build-farm", 0.45, ("dsh",)),
    ("research-cluster", 0.25, ("dsh", "anthropic-capture")),
    ("ci-runners", 0.15, ("claude-code",)),
    ("laptop-ana", 0.10, ("claude-code", "claude-trace")),
    ("eval-grid", 0.05, ("openai-capture",)),
)
ANTHROPIC_MODELS = (
    ("claude-sonnet-4-20250514", 0.45),
    ("claude-sonnet-4-5-20250929", 0.30),
    ("claude-opus-4-1-20250805", 0.15),
    ("claude-haiku-4-5-20251001", 0.10),
)
OPENAI_MODELS = (("gpt-4.1", 0.6), ("gpt-4.1-mini", 0.4))
CLIENT_RELEASES = ("1.0.88", "1.0.102", "2.0.5", "2.0.14", "2.0.31")
WARNING_KINDS = ("unexplained-miss", "over-credit", "render-mismatch", "marker-limit", "provider-disagrees")
TASKS = (
    "Fix the flaky socket test",
    "Add a migration for the session index",
    "Review the ingest batching",
    "Port the CLI to the new config loader",
    "Summarise the failing CI jobs",
    "Refactor the retry budget",
    "Write the release notes",
    "Bisect the slow query",
)
# One request's events in a dsh-shaped log; the list pages never read them, the fold of a session does.
EVENT_CYCLE = (
    ("user/message", '{"id":"u","role":"user","content":"next step please","source":{"kind":"user"}}', True),
    ("step/start", '{"turn":1,"step":0}', False),
    ("assistant/chunk", '{"kind":"text","chunk":"Looking at the failing test now"}', False),
    ("assistant/chunk", '{"kind":"text","chunk":" and the fixture it uses."}', False),
    ("assistant/message", '{"turn":1,"step":0,"message":{"role":"assistant","content":"done"}}', True),
    ("tool/call", '{"toolCallId":"call_1","toolName":"read_file","input":{"path":"src/app.py"}}', False),
    ("tool/result", '{"toolCallId":"call_1","content":"def main(): return 0"}', True),
    ("step/end", '{"turn":1,"step":0,"finishReason":"tool-calls"}', False),
)


@dataclass
class Fleet:
    """What was loaded, for the report."""

    sessions: int = 0
    requests: int = 0
    events: int = 0
    warnings: int = 0
    heavy_session_id: int | None = None
    heavy_requests: int = 0
    timings: dict[str, float] = field(default_factory=dict)


# --- the scratch database ----------------------------------------------------------------------------


def _server_url(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
        raise SystemExit(f"DATABASE_URL names the database {name!r}; use a plain lowercase scratch name")
    return urlunsplit(parts._replace(path="/postgres")), name


def fleet_mark(args: argparse.Namespace) -> str:
    """What a built fleet is labelled with (the database's comment): a kept database is reused only
    when it was built to the same figures and finished loading."""
    figures = f"{args.sessions} sessions, {args.events} events, {args.heavy} heavy, seed {args.seed}"
    return f"cachescope fleet: {figures}"


def database_ready(url: str, args: argparse.Namespace, *, rebuild: bool) -> bool:
    """Whether the scratch database already holds this fleet; if not (or ``rebuild``), create it empty."""
    import psycopg

    server, name = _server_url(url)
    with psycopg.connect(server, autocommit=True, connect_timeout=5) as conn:
        found = conn.execute(
            "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s", (name,)
        ).fetchone()
        if found is not None and found[0] == fleet_mark(args) and not rebuild:
            return True
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    return False


def mark_built(url: str, args: argparse.Namespace) -> None:
    import psycopg

    server, name = _server_url(url)
    with psycopg.connect(server, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f"COMMENT ON DATABASE {name} IS '{fleet_mark(args)}'")


def drop_database(url: str) -> None:
    import psycopg

    server, name = _server_url(url)
    with psycopg.connect(server, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    print(f"\ndropped the scratch database {name}")


# --- loading -----------------------------------------------------------------------------------------


def prepare(args: argparse.Namespace, *, built: bool) -> Fleet:
    """Migrate, and load the fleet unless the database ``built`` holds it already."""
    from django.core.management import call_command

    fleet = Fleet()
    started = time.perf_counter()
    call_command("migrate", verbosity=0)
    fleet.timings["migrate"] = time.perf_counter() - started
    if built:
        return _describe(fleet)
    rng = random.Random(args.seed)
    started = time.perf_counter()
    _ingest_heavy_log(rng)
    fleet.timings["ingest of the long dsh log (with folds and analyses)"] = time.perf_counter() - started
    started = time.perf_counter()
    loaded_events = _load_bulk(rng, args)
    fleet.timings[f"COPY of the fleet ({loaded_events:,} events)"] = time.perf_counter() - started
    started = time.perf_counter()
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    fleet.timings["VACUUM ANALYZE"] = time.perf_counter() - started
    return _describe(fleet)


def _describe(fleet: Fleet) -> Fleet:
    from dashboard.models import Event, Request, Session, Warning

    fleet.sessions = Session.objects.count()
    fleet.requests = Request.objects.count()
    fleet.events = Event.objects.count()
    fleet.warnings = Warning.objects.count()
    # The analysed long session: the one whose requests carry analyses.
    heavy = (
        Session.objects.filter(analysis__status="done", request_count__gte=HEAVY_REQUESTS * 9 // 10)
        .order_by("-request_count")
        .values_list("pk", "request_count")
        .first()
    )
    if heavy is None:
        raise SystemExit("no analysed session with about 2,000 requests was loaded")
    fleet.heavy_session_id, fleet.heavy_requests = heavy
    return fleet


def _ingest_heavy_log(rng: random.Random) -> None:
    """A long dsh session (compactions, prunings, about 2,000 requests) through the real ingest, so its
    page shows real folds and analyses."""
    from dashboard.demo import pools
    from dashboard.demo.cache_model import AnthropicCache
    from dashboard.demo.clock import at, epoch_ms
    from dashboard.demo.dsh_scenarios import DshPlan, DshRun, dsh_tools, run_plan
    from dashboard.demo.formats.dsh_log import DshLog
    from dashboard.demo.formats.dsh_writer import write_session
    from dashboard.demo.scenarios import OPUS_41, SONNET
    from dashboard.ingest.files import ingest_paths

    turns = HEAVY_REQUESTS // 5
    log = DshLog(
        session_id=pools.uuid4(rng),
        version=4,
        rng=rng,
        cache=AnthropicCache(),
        model=SONNET,
        time_ms=epoch_ms(at(86400)),
        tools=dsh_tools(rng),
        system_text=pools.system_prompt(rng, 20),
        cwd="/srv/agents/long-run",
        title="Long refactor of the ingest pipeline",
    )
    plan = DshPlan(
        turns=turns,
        steps=(3, 5),
        compact_after=tuple(range(40, turns, 40)),
        prune_after=tuple(range(7, turns, 9)),
    )
    run_plan(DshRun(log, output_lines=(2, 8)), plan, log.system_text, (SONNET, OPUS_41))
    with tempfile.TemporaryDirectory(prefix="cachescope-long-log-") as scratch:
        write_session(Path(scratch) / log.session_id, log, zstd=False)
        summary = ingest_paths(paths=[Path(scratch)], source_name="build-farm")
    if summary.errors:
        raise SystemExit(f"the long log did not ingest cleanly: {summary.errors[:3]}")


@dataclass(frozen=True, slots=True)
class _SessionPlan:
    id: int
    source_id: int
    fmt: str
    requests: int
    events: int


def _load_bulk(rng: random.Random, args: argparse.Namespace) -> int:
    from django.db import connection

    from dashboard.models import Event, Session, Source

    source_ids = {
        name: Source.objects.get_or_create(name=name, defaults={"kind": formats[0]})[0].pk
        for name, _, formats in SOURCES
    }
    existing_sessions = Session.objects.count()
    existing_events = Event.objects.count()
    plans = _plan_sessions(
        rng,
        sessions=args.sessions - existing_sessions,
        events=args.events - existing_events,
        heavy=args.heavy,
        first_id=(Session.objects.order_by("-pk").values_list("pk", flat=True).first() or 0) + 1,
        source_ids=source_ids,
    )
    raw = connection.cursor().cursor  # psycopg's own cursor, for COPY
    raw.execute("SET synchronous_commit = off")
    raw.execute("SET maintenance_work_mem = '512MB'")
    models_of = {name: formats for name, _, formats in SOURCES}
    names = {pk: name for name, pk in source_ids.items()}
    sessions_rows, requests_rows, warnings_rows = [], [], []
    for plan in plans:
        session_row, request_rows, warning_rows = _session_rows(rng, plan, models_of[names[plan.source_id]])
        sessions_rows.append(session_row)
        requests_rows.append(request_rows)
        warnings_rows.append(warning_rows)
    _copy(raw, "dashboard_session", SESSION_COLUMNS, sessions_rows)
    raw.execute(
        "SELECT setval(pg_get_serial_sequence('dashboard_session', 'id'), max(id)) FROM dashboard_session"
    )
    with _bare_table(raw, "dashboard_request"):
        _copy(raw, "dashboard_request", REQUEST_COLUMNS, (row for rows in requests_rows for row in rows))
    _copy(raw, "dashboard_warning", WARNING_COLUMNS, (row for rows in warnings_rows for row in rows))
    with _bare_table(raw, "dashboard_event"):
        _copy_lines(raw, "dashboard_event", EVENT_COLUMNS, _event_lines(plans))
    load_extras(raw, rng, [plan.id for plan in plans], sorted(source_ids.values()))
    return sum(plan.events for plan in plans)


def _plan_sessions(
    rng: random.Random, *, sessions: int, events: int, heavy: int, first_id: int, source_ids: dict[str, int]
) -> list[_SessionPlan]:
    """Requests per session (log-normal, a few at 2,000), events in proportion to requests."""
    names = [name for name, _, _ in SOURCES]
    weights = [weight for _, weight, _ in SOURCES]
    formats = {name: fmts for name, _, fmts in SOURCES}
    requests = [min(600, max(1, int(rng.lognormvariate(math.log(8), 1.0)))) for _ in range(sessions)]
    for index in rng.sample(range(sessions), min(heavy, sessions)):
        requests[index] = HEAVY_REQUESTS
    raw = [count * 7 + 3 for count in requests]
    scale = events / sum(raw)
    plans = []
    for index, count in enumerate(requests):
        source = rng.choices(names, weights)[0]
        plans.append(
            _SessionPlan(
                id=first_id + index,
                source_id=source_ids[source],
                fmt=rng.choice(formats[source]),
                requests=count,
                events=max(count * 2 + 1, round(raw[index] * scale)),
            )
        )
    return plans


SESSION_COLUMNS = (
    "id", "source_id", "external_id", "parent_external_id", "lineage", "title", "cwd", "format",
    "format_version", "source_path", "started_at", "ended_at", "unfoldable", "crash_tail",
    "event_count", "request_count", "uncached_input_tokens", "cache_read_tokens", "cache_write_tokens",
    "cache_write_1h_tokens", "output_tokens", "hit_rate", "warning_count", "models_used",
    "last_activity", "created_at", "client_version", "labels",
)  # fmt: skip
REQUEST_COLUMNS = (
    "session_id", "ordinal", "key", "lineage", "provider", "platform", "api", "model", "started_at",
    "first_token_at", "status", "params", "units", "markers", "has_body", "render_warnings",
    "uncached_input_tokens", "cache_read_tokens", "cache_write_5m_tokens", "cache_write_1h_tokens",
    "output_tokens", "usage_convention", "usage_raw", "client_version", "chain", "provider_miss_reason",
)  # fmt: skip
WARNING_COLUMNS = (
    "session_id", "kind", "place", "message", "count", "first_seen", "last_seen",
    "happened_at", "tokens_at_stake", "cost_at_stake",
)  # fmt: skip
EVENT_COLUMNS = ("session_id", "seq", "type", "time", "data", "surface_op", "source_event_seqs", "ignorable")


def _session_rows(
    rng: random.Random, plan: _SessionPlan, formats: tuple[str, ...]
) -> tuple[tuple[Any, ...], list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    openai = plan.fmt == "openai-capture"
    pool = OPENAI_MODELS if openai else ANTHROPIC_MODELS
    main_model = rng.choices([m for m, _ in pool], [w for _, w in pool])[0]
    side_model = rng.choice([m for m, _ in pool]) if rng.random() < 0.25 else None
    reported = rng.random() > 0.03  # a few logs report no usage at all
    hit = rng.betavariate(8, 2)  # most sessions cache well, a tail does not
    started = EPOCH - timedelta(seconds=rng.uniform(0, 90 * 86400))
    step_s = rng.uniform(4, 40)
    system = rng.randint(3_000, 20_000)
    growth = rng.randint(300, 3_000)
    # Claude Code and dsh logs name the client release; the captures do not.
    client = f"{plan.fmt} {rng.choice(CLIENT_RELEASES)}" if plan.fmt in ("claude-code", "dsh") else ""
    miss_reason = "" if openai else rng.choice(("", "", "tools_changed", "system_changed", "ttl_expired"))
    totals = [0, 0, 0, 0, 0]  # uncached, read, write 5m, write 1h, output
    rows = []
    for ordinal in range(plan.requests):
        model = side_model if side_model and ordinal % 7 == 3 else main_model
        at = started + timedelta(seconds=ordinal * step_s)
        if reported:
            prompt = system + ordinal * growth
            read = int(prompt * min(1.0, max(0.0, rng.gauss(hit, 0.08)))) if ordinal else 0
            write = prompt - read - rng.randint(3, 60)
            write_1h = write if openai is False and ordinal % 50 == 0 else 0
            output = rng.randint(20, 900)
            usage: tuple[int | None, ...] = (prompt - read - write, read, write - write_1h, write_1h, output)
            for index, value in enumerate(usage):
                totals[index] += value or 0
        else:
            usage = (None, None, None, None, None)
        rows.append(
            (
                plan.id, ordinal, f"req_{plan.id:x}_{ordinal}", "main", "openai" if openai else "anthropic",
                "", "responses" if openai else "messages", model, at, at + timedelta(seconds=1.5), 200,
                "{}", "[]", "[]", False, "[]", *usage, "openai" if openai else "anthropic", "{}",
                client, "", miss_reason if ordinal and ordinal % 97 == 0 else "",
            )
        )  # fmt: skip
    # The session's hit rate by the rule every page uses; a session that reported nothing has none.
    rate = hit_rate(
        read=totals[1] if reported else None,
        uncached=totals[0],
        writes=totals[2] + totals[3] if reported else None,
    )
    warning_count = rng.choice((1, 1, 2, 3, 6)) if rng.random() < 0.12 else 0
    warnings = []
    for n, kind in enumerate(rng.choices(WARNING_KINDS, k=warning_count)):
        stake = rng.randrange(200_000)  # tokens at stake, priced at Sonnet's input less its read
        place = f"request {rng.randrange(plan.requests)} #{n}"
        cost = round(stake * 2.7e-6, 8)
        warnings.append((plan.id, kind, place, f"{kind} here", 1, started, started, started, stake, cost))
    ended = started + timedelta(seconds=plan.requests * step_s)
    models_used = ",".join(dict.fromkeys(m for m in (main_model, side_model) if m))
    session = (
        plan.id, plan.source_id, f"{rng.getrandbits(128):032x}", "", "main",
        f"{rng.choice(TASKS)} #{plan.id}", f"/srv/agents/{plan.id % 300}", plan.fmt,
        "4" if plan.fmt == "dsh" else "", f"{plan.fmt}/{plan.id}.jsonl", started, ended, "", "",
        plan.events, plan.requests, totals[0], totals[1], totals[2] + totals[3], totals[3], totals[4],
        rate, warning_count, models_used, ended, ended, client, "{}",
    )  # fmt: skip
    return session, rows, warnings


def _copy(raw: Any, table: str, columns: tuple[str, ...], rows: Any) -> None:
    with raw.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def _copy_lines(raw: Any, table: str, columns: tuple[str, ...], lines: Iterator[str]) -> None:
    """COPY in text format from ready-made lines: ten million rows are cheaper as strings."""
    with raw.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        batch: list[str] = []
        for line in lines:
            batch.append(line)
            if len(batch) >= 20_000:
                copy.write("".join(batch))
                batch.clear()
        if batch:
            copy.write("".join(batch))


@functools.lru_cache(maxsize=8192)
def _stamp(second: int) -> str:
    return datetime.fromtimestamp(second, UTC).isoformat()


def _event_lines(plans: list[_SessionPlan]) -> Iterator[str]:
    """Each session's events: a header, then the request cycle until its event count is reached."""
    cycle = [
        (event_type, data, '"append"' if surface else "\\N") for event_type, data, surface in EVENT_CYCLE
    ]
    width = len(cycle)
    for plan in plans:
        start = int(EPOCH.timestamp()) - 86400 * 90 + plan.id * 77
        yield f'{plan.id}\t0\trequest/header\t{_stamp(start)}\t{{"model":"claude"}}\t\\N\t\\N\tf\n'
        for seq in range(1, plan.events):
            event_type, data, surface = cycle[(seq - 1) % width]
            yield f"{plan.id}\t{seq}\t{event_type}\t{_stamp(start + seq * 3)}\t{data}\t{surface}\t\\N\tf\n"


@contextmanager
def _bare_table(raw: Any, table: str) -> Iterator[None]:
    """Drop a table's secondary indexes and constraints for a bulk COPY, then build them once after:
    building an index over ten million rows is much cheaper than maintaining it row by row."""
    raw.execute(
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE conrelid = %s::regclass AND contype IN ('u', 'f')",
        (table,),
    )
    constraints = raw.fetchall()
    raw.execute(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s AND indexname NOT IN "
        "(SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass)",
        (table, table),
    )
    indexes = raw.fetchall()
    for name, _ in constraints:
        raw.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
    for name, _ in indexes:
        raw.execute(f'DROP INDEX "{name}"')
    yield
    for _, definition in indexes:
        raw.execute(definition)
    for name, definition in constraints:
        raw.execute(f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}')
