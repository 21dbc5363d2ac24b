from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture
def shared_data() -> Path:
    """The real agent logs beside the checkout; tests using it skip where the folder is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"{SHARED_DATA} is not present on this machine")
    return SHARED_DATA


def pytest_configure(config: pytest.Config) -> None:
    """Link static files by their plain names, served from static/, so no test needs collectstatic.

    The hashed names of the deployed storage would need a manifest that a fresh checkout lacks, and
    one left over from an earlier collectstatic would serve stale copies of files being edited.
    """
    from django.conf import settings

    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
