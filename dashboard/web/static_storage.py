"""Where pages find their static files: hashed, compressed copies once collected, plain names before."""

from __future__ import annotations

import logging
from functools import cache

from django.contrib.staticfiles import finders
from whitenoise.storage import CompressedManifestStaticFilesStorage

logger = logging.getLogger(__name__)


@cache
def _warn_not_collected(name: str) -> None:
    """Warn once about a static file that exists but was not collected.

    A name no source holds is not warned about: WhiteNoise, starting, asks for the unhashed name of
    every collected file it takes for a hashed one (``htmx-2.0.11.js`` for ``htmx-2.0.11.min.js``),
    and a warning there would tell the operator to run the collectstatic that just ran.
    """
    if not finders.find(name):
        return
    logger.warning(
        "%s is not in the collected static files' manifest, so pages link its plain name, which "
        "browsers keep for a minute only: run `manage.py collectstatic` after each upgrade",
        name,
    )


class CollectedStaticFilesStorage(CompressedManifestStaticFilesStorage):
    """WhiteNoise's storage: collectstatic writes each file under a name holding its content's hash,
    with gzip and brotli copies, which WhiteNoise serves with a year's cache lifetime.

    A file collectstatic has not listed (a server started without it, or a file added since) is
    linked by its plain name, which WhiteNoise serves from static/ with a short lifetime, where
    Django's own storage would fail every page that links it.
    """

    def stored_name(self, name: str) -> str:
        try:
            return super().stored_name(name)
        except ValueError:
            _warn_not_collected(name)
            return name
