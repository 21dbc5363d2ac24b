from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.core.cache import cache
from django.test import Client

from dashboard.ingest.files import ingest_paths
from dashboard.models import Session
from tests.dashboard.alert_fleet import Plan, write_plan
from tests.dashboard.logs import capture_line, write_dsh_log, write_jsonl
from tests.projections.cache.whatif.sessions import clock_session, idle_session


@pytest.fixture(autouse=True)
def _empty_cache() -> None:
    """Each test starts with an empty cache, as a fresh deployment does."""
    cache.clear()


@pytest.fixture
def make_user(db: None) -> Callable[..., User]:
    def make(username: str = "ana", role: str | None = "viewer") -> User:
        user = User.objects.create_user(username=username, password="a-long-test-password")
        if role:
            user.groups.add(Group.objects.get_or_create(name=role)[0])
        return user

    return make


@pytest.fixture
def viewer_client(make_user: Callable[..., User]) -> Client:
    client = Client()
    client.force_login(make_user("viewer", "viewer"))
    return client


@pytest.fixture
def operator_client(make_user: Callable[..., User]) -> Client:
    client = Client()
    client.force_login(make_user("operator", "operator"))
    return client


@pytest.fixture
def dsh_log(tmp_path: Path) -> Path:
    """A small, valid dsh session log with usage on two assistant turns."""
    return write_dsh_log(tmp_path / "s1" / "session.jsonl", session_id="s1", turns=2)


@pytest.fixture
def ingest_plans(tmp_path: Path, django_capture_on_commit_callbacks: Any) -> Callable[..., None]:
    """Write and ingest the plans' Claude Code transcripts (tests/dashboard/alert_fleet.py); with
    ``analyse``, run the folds and analyses that follow each ingest too."""

    def ingest(*plans: Plan, analyse: bool = True) -> None:
        for number, plan in enumerate(plans):
            root = tmp_path / f"{plan.source}-{plan.version}-{plan.first:%m%d}-{number}"
            write_plan(root, plan)
            with django_capture_on_commit_callbacks(execute=analyse):
                summary = ingest_paths(paths=[root], source_name=plan.source)
            assert not summary.errors

    return ingest


@pytest.fixture
def ingested(tmp_path: Path, django_capture_on_commit_callbacks: Any) -> Callable[..., Session]:
    """Ingest a hand-built capture session (``clock`` or ``idle``) with its follow-ups (analysis,
    what-if) run, as a worker runs them on commit."""

    def ingest(name: str = "clock") -> Session:
        records = clock_session() if name == "clock" else idle_session()
        path = write_jsonl(tmp_path / f"{name}.jsonl", [capture_line(r) for r in records])
        with django_capture_on_commit_callbacks(execute=True):
            summary = ingest_paths(paths=[path], source_name="laptop", format="anthropic-capture")
        assert not summary.errors, summary.errors
        return Session.objects.get(external_id=name)

    return ingest
