"""The C hash of rendered units, and the pages' templates and static files; everything else about
the package is in pyproject.toml.

The extension is optional: without a C compiler the install still succeeds and the engine hashes
in plain Python (the twin in projections/cache/render/canonical.py), and logs a warning once a process
saying so.

``templates/`` and ``static/`` sit beside the packages in a checkout; an installed copy finds them
under ``<prefix>/share/cachescope/`` (see ``SITE_DIR`` in dashboard/settings.py).
"""

import os

from setuptools import Extension, setup


def _site_files(*folders: str) -> list[tuple[str, list[str]]]:
    files = []
    for folder in folders:
        for root, _dirs, names in os.walk(folder):
            if names:
                files.append(
                    (os.path.join("share", "cachescope", root), [os.path.join(root, n) for n in names])
                )
    return files


setup(
    ext_modules=[
        Extension("projections.cache.render._native", ["projections/cache/render/_native.c"], optional=True)
    ],
    data_files=_site_files("templates", "static"),
)
