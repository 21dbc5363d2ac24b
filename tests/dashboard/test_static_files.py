"""Static files and the favicon: compressed, and cached by browsers for as long as their name holds."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.templatetags.static import static
from django.test import Client

pytestmark = pytest.mark.django_db

STATIC_SOURCES = Path(django_settings.BASE_DIR) / "static"
# WhiteNoise's lifetime for a name that holds its content's hash: ten years, and never revalidated.
FOREVER = "max-age=315360000, public, immutable"


def body_of(response: Any) -> bytes:
    """A file response's bytes, closing the file it streams from."""
    try:
        return b"".join(response.streaming_content)
    finally:
        response.close()


@pytest.fixture
def collected(settings: Any, tmp_path: Path) -> Path:
    """collectstatic with the deployed storage, over what the login page links only (plotly.js's
    brotli copy alone takes seconds to write)."""
    sources = tmp_path / "sources"
    for name in ("css/cachescope.css", "favicon.svg", "vendor/htmx-2.0.11.min.js", "js/chart-theme.js"):
        (sources / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(STATIC_SOURCES / name, sources / name)
    settings.STATICFILES_DIRS = [sources]
    settings.STATICFILES_FINDERS = ["django.contrib.staticfiles.finders.FileSystemFinder"]
    settings.STATIC_ROOT = tmp_path / "collected"
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "dashboard.web.static_storage.CollectedStaticFilesStorage"},
    }
    call_command("collectstatic", interactive=False, verbosity=0)
    return settings.STATIC_ROOT


def test_the_favicon_is_served_at_the_site_root_to_anyone_and_kept_a_week(client: Client) -> None:
    response = client.get("/favicon.ico")
    assert response.status_code == 200
    assert response["Content-Type"] == "image/x-icon"
    assert set(response["Cache-Control"].split(", ")) == {"public", "max-age=604800"}
    body = body_of(response)
    assert body[:4] == b"\x00\x00\x01\x00"  # an ICO header
    assert body == (STATIC_SOURCES / "favicon.ico").read_bytes()


def test_the_favicon_refuses_a_post(client: Client) -> None:
    assert client.post("/favicon.ico").status_code == 405


def test_every_page_links_its_icons(client: Client) -> None:
    html = client.get("/accounts/login/").content.decode()
    assert f'<link rel="icon" href="{static("favicon.svg")}" type="image/svg+xml">' in html
    assert '<link rel="icon" href="/favicon.ico" sizes="32x32">' in html


def test_pages_link_hashed_names_that_are_cached_for_good_and_sent_compressed(collected: Path) -> None:
    url = static("css/cachescope.css")
    assert url.startswith("/static/css/cachescope.")
    assert url != "/static/css/cachescope.css"
    assert url in Client().get("/accounts/login/").content.decode()

    for encoding, suffix in (("br", ".br"), ("gzip", ".gz")):
        response = Client().get(url, headers={"accept-encoding": encoding})
        assert response.status_code == 200
        assert response["Cache-Control"] == FOREVER
        assert response["Content-Encoding"] == encoding
        assert response["Vary"] == "Accept-Encoding"
        on_disk = collected / url.removeprefix("/static/")
        assert body_of(response) == Path(f"{on_disk}{suffix}").read_bytes()

    plain = Client().get(url, headers={"accept-encoding": "identity"})
    assert body_of(plain) == (STATIC_SOURCES / "css/cachescope.css").read_bytes()
    assert "Content-Encoding" not in plain


def test_a_plain_name_that_may_change_is_kept_only_briefly(collected: Path) -> None:
    response = Client().get("/static/css/cachescope.css")
    body_of(response)
    assert response.status_code == 200
    assert response["Cache-Control"] == "max-age=60, public"


def test_a_file_added_since_collectstatic_is_linked_by_its_plain_name_with_a_warning(
    collected: Path, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    added = Path(settings.STATICFILES_DIRS[0]) / "js" / "added.js"
    added.parent.mkdir(exist_ok=True)
    added.write_text("// added after collectstatic\n")
    assert static("vendor/htmx-2.0.11.min.js") != "/static/vendor/htmx-2.0.11.min.js"
    with caplog.at_level(logging.WARNING, logger="dashboard.web.static_storage"):
        assert static("js/added.js") == "/static/js/added.js"
    assert "js/added.js is not in the collected static files' manifest" in caplog.text
    response = Client().get("/static/js/added.js")
    assert body_of(response) == added.read_bytes()
    assert response["Cache-Control"] == "max-age=60, public"


def test_serving_the_collected_files_warns_of_no_file(
    collected: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from whitenoise.middleware import WhiteNoiseMiddleware

    from dashboard.web.static_storage import _warn_not_collected

    _warn_not_collected.cache_clear()  # each name is warned about once a process
    # Starting, WhiteNoise asks for vendor/htmx-2.0.11.js, its guess at the unhashed name of
    # htmx-2.0.11.min.js; no such file exists, so there is nothing to collect and nothing to say.
    with caplog.at_level(logging.WARNING, logger="dashboard.web.static_storage"):
        WhiteNoiseMiddleware(lambda request: None)
    assert "manifest" not in caplog.text


def test_pages_render_before_collectstatic_has_ever_run(settings: Any, tmp_path: Path) -> None:
    settings.STATIC_ROOT = tmp_path / "never-collected"
    settings.STATIC_ROOT.mkdir()  # settings.py makes it, empty, on start-up
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "dashboard.web.static_storage.CollectedStaticFilesStorage"},
    }
    html = Client().get("/accounts/login/").content.decode()
    assert 'href="/static/css/cachescope.css"' in html
