"""Each service the site depends on, asked once with a short timeout: the database, the task broker
and the shared cache, each ``ok``, ``down`` or ``not used`` (tasks run in-process, the cache is the
process's memory).

What a down service means differs: without the database no page can answer; without the broker an
ingest still stores and its analyses wait; without the shared cache pages compute what they would
have read. :func:`health_report` says which with its overall status.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from django.core.cache import caches
from django.db import DatabaseError, connection

from dashboard.ingest.followups import broker_reachable
from dashboard.storage.shared_cache import UNREACHABLE, TolerantRedisCache

State = Literal["ok", "down", "not used"]
TIMEOUT_SECONDS = 2.0


@dataclass(frozen=True, slots=True)
class Check:
    """One service's state, how long asking took, and what it answered when it failed."""

    name: str
    state: State
    milliseconds: float
    error: str = ""


@dataclass(frozen=True, slots=True)
class HealthReport:
    """Every check and what they mean together: ``ok``, ``degraded`` (pages answer, something
    waits or is slower) or ``down`` (no page can answer)."""

    checks: tuple[Check, ...]

    @property
    def status(self) -> Literal["ok", "degraded", "down"]:
        states = {check.name: check.state for check in self.checks}
        if states["database"] == "down":
            return "down"
        return "degraded" if "down" in states.values() else "ok"


def _timed(name: str, ask: Callable[[], State]) -> Check:
    started = time.perf_counter()
    try:
        state, error = ask(), ""
    except (DatabaseError, *UNREACHABLE, OSError) as failure:
        state, error = "down", str(failure).splitlines()[0] if str(failure) else type(failure).__name__
    return Check(name, state, round((time.perf_counter() - started) * 1000, 1), error)


def _database() -> State:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return "ok"


def _broker() -> State:
    from dashboard.celery import app

    if app.conf.task_always_eager:
        return "not used"
    if not broker_reachable(timeout=TIMEOUT_SECONDS):
        raise OSError("the broker (CELERY_BROKER_URL) refused or did not answer")
    return "ok"


def _cache() -> State:
    backend = caches["default"]
    if not isinstance(backend, TolerantRedisCache):
        return "not used"
    # Past the tolerant cache's own answers: its client, which raises when Redis is down.
    backend._cache.get_client(write=False).ping()
    return "ok"


def health_report() -> HealthReport:
    """Ask the database, the broker and the cache now."""
    return HealthReport((_timed("database", _database), _timed("broker", _broker), _timed("cache", _cache)))
