"""The render loop's C accelerator; everything else about the package is in pyproject.toml.

The extension is optional: without a C compiler the install still succeeds and the engine runs the
same algorithm in plain Python (the twins in projections/cache/canonical.py and units.py), six to
eight times slower.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("projections.cache._native", ["projections/cache/_native.c"], optional=True)])
