"""The engine's two optional accelerators; everything else about the package is in pyproject.toml.

Both are optional: without them the install still succeeds and the engine runs the same source.

- ``projections/cache/_native.c`` hashes a rendering's units and chains their prefix hashes. Without
  a C compiler the engine hashes in plain Python (the twin in canonical.py) and logs a warning once a
  process saying so.
- ``projections/cache/rendering.py``, the loop over a request's messages, compiled with mypyc: about
  one and a half times the render throughput. Only in a regular install: an editable install would
  load the compiled module in place of a source file someone has edited since, so it keeps
  rendering from the source.
"""

import os
import sys

from setuptools import Extension, setup

COMPILED_PYTHON = ["projections/cache/rendering.py"]

MYPYC_OPTIONS = [
    f"--config-file={os.devnull}",
    "--strict",
    "--ignore-missing-imports",
    "--follow-imports=silent",
]
"""Type-check the compiled modules on their own: the project's mypy configuration loads the Django
plugin, which needs the whole project and its settings importable in the build environment."""


def compiled_python() -> list[Extension]:
    """The mypyc extensions of :data:`COMPILED_PYTHON`, or none when mypyc cannot make them."""
    try:
        from mypyc.build import mypycify
    except ImportError:
        print("mypyc is not installed: rendering runs from its Python source", file=sys.stderr)
        return []
    try:
        extensions = mypycify([*MYPYC_OPTIONS, *COMPILED_PYTHON], opt_level="3")
    except (Exception, SystemExit) as error:  # a type error, or code mypyc does not support
        print(f"mypyc could not compile {COMPILED_PYTHON}: {error}", file=sys.stderr)
        return []
    for extension in extensions:
        extension.optional = True  # without a C compiler, the source serves
    return extensions


def building_a_wheel() -> bool:
    """True when setuptools builds a wheel (``pip install .``), not an editable install or metadata."""
    return "bdist_wheel" in sys.argv


native = Extension("projections.cache._native", ["projections/cache/_native.c"], optional=True)
setup(ext_modules=[native, *(compiled_python() if building_a_wheel() else [])])
