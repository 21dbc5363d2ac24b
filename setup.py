"""The C hash of rendered units; everything else about the package is in pyproject.toml.

The extension is optional: without a C compiler the install still succeeds and the engine hashes
in plain Python (the twin in projections/cache/render/canonical.py), and logs a warning once a process
saying so.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("projections.cache.render._native", ["projections/cache/render/_native.c"], optional=True)
    ]
)
