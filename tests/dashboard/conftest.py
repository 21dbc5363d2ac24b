from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.core.cache import cache
from django.test import Client

from tests.dashboard.logs import write_dsh_log


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
