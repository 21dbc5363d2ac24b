"""Browser tests: Playwright driving the system's Chromium against a live server.

Playwright's own browser download does not work on closed networks, so the tests launch the
Chromium the system package manager installed. Screenshots of each page land in test-artifacts/.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from dashboard.demo import DemoManifest, ManifestFile, write_demo_dataset
from dashboard.ingest.files import ingest_paths

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# Playwright's sync API runs an event loop in the test thread; the ORM calls the tests make there
# are still synchronous and safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if CHROMIUM:
        return
    skip = pytest.mark.skip(reason="no chromium on this machine (apt-get install chromium)")
    for item in items:
        if "e2e" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "args": [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ],
    }


@pytest.fixture
def login_as(live_server: Any, context: Any, transactional_db: None) -> Callable[[str], User]:
    """Sign the browser context in as a new user with ``role``."""

    def login(role: str) -> User:
        user = User.objects.create_user(username=f"{role}-user", password="a-long-test-password")
        user.groups.add(Group.objects.get_or_create(name=role)[0])
        client = Client()
        client.force_login(user)
        cookie = client.cookies["sessionid"]
        context.add_cookies([{"name": "sessionid", "value": cookie.value, "url": live_server.url}])
        return user

    return login


@pytest.fixture
def screenshot(page: Any, request: pytest.FixtureRequest) -> Callable[[str], None]:
    """Save a full-page screenshot under test-artifacts/ named for the test and the step."""
    ARTIFACTS.mkdir(exist_ok=True)

    def take(step: str) -> None:
        page.screenshot(path=str(ARTIFACTS / f"{request.node.name}-{step}.png"), full_page=True)

    return take


@pytest.fixture(scope="session")
def demo_dataset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, DemoManifest]:
    """The demo dataset written once per run; tests ingest only the files they need from it."""
    root = tmp_path_factory.mktemp("demo")
    return root, write_demo_dataset(root)


@pytest.fixture
def ingest_demo_file(
    demo_dataset: tuple[Path, DemoManifest], transactional_db: None
) -> Callable[[str, str], ManifestFile]:
    """Ingest the first demo file of ``fmt`` whose expected sessions include ``scenario``."""

    def ingest(fmt: str, scenario: str) -> ManifestFile:
        root, manifest = demo_dataset
        for file in manifest.files_of(fmt):
            if any(scenario in session.scenarios for session in file.sessions):
                ingest_paths(paths=[root / file.path], source_name=file.source)
                return file
        raise LookupError(f"the demo dataset has no {fmt} file with the scenario {scenario!r}")

    return ingest
