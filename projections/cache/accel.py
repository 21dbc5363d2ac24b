"""The render loop's C accelerator, when the install built it.

``_native.c`` holds the hot loops of rendering a request: flattening a message list into units,
walking their canonical bytes for code points, block hashes and the prefix-hash chain, lookback
positions and the calibrated token sums. Each has a plain-Python twin beside its caller that gives
identical results (the tests run both); :data:`native` is ``None`` where no C compiler was at hand
when the package was installed, and the twins serve. Callers read :data:`native` at call time, so a
test or benchmark can switch the accelerator off by setting it to ``None``.
"""

from __future__ import annotations

try:
    from projections.cache import _native
except ImportError:  # installed without a C compiler
    _native = None  # type: ignore[assignment]

native = _native
"""The ``_native`` extension module (typed by ``_native.pyi``), or ``None``."""
