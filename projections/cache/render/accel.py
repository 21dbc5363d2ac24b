"""The C hash of a rendering's units, when the install built it.

``_native.c`` walks the units' canonical bytes for their code points, block hashes and the
prefix-hash chain: byte work with no rendering rule in it. Its plain-Python twin is
:func:`projections.cache.render.canonical.python_hash_units`, which gives identical results (the tests run
both); :data:`native` is ``None`` where no C compiler was at hand when the package was installed,
and the twin serves. Callers read :data:`native` at call time, so a test or benchmark can switch the
accelerator off by setting it to ``None``.

Without the extension every process that imports the engine logs :data:`MISSING` once, as a
warning: a deployment should learn that it renders slowly from its log, not from a profile. It is a
log record rather than a :mod:`warnings` warning because nothing in the caller's code is wrong.
"""

from __future__ import annotations

import logging

try:
    from projections.cache.render import _native
except ImportError:  # installed without a C compiler
    _native = None  # type: ignore[assignment]

native = _native
"""The ``_native`` extension module (typed by ``_native.pyi``), or ``None``."""

MISSING = (
    "projections/cache/render/_native.c is not built (no C compiler when the package was installed): "
    "request units are hashed in plain Python, several times slower. Reinstall with a C compiler "
    "at hand to build it."
)

if native is None:
    logging.getLogger(__name__).warning(MISSING)
