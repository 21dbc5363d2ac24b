"""A terminal progress bar for management commands; silent when the output is not a terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    def __init__(self, total: int, *, label: str, stream: TextIO | None = None, width: int = 30) -> None:
        self.total = max(total, 0)
        self.done = 0
        self.label = label
        self.stream = stream or sys.stderr
        self.width = width
        self.enabled = self.stream.isatty()
        self._last_draw = 0.0

    def advance(self, amount: int) -> None:
        self.done = min(self.total, self.done + amount) if self.total else self.done + amount
        now = time.monotonic()
        if self.enabled and (now - self._last_draw > 0.1 or self.done >= self.total):
            self._last_draw = now
            self._draw()

    def update(self, done: int) -> None:
        self.advance(done - self.done)

    def _draw(self) -> None:
        fraction = self.done / self.total if self.total else 1.0
        filled = round(self.width * fraction)
        bar = "#" * filled + "-" * (self.width - filled)
        self.stream.write(f"\r{self.label} [{bar}] {fraction:6.1%}")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.done = self.total
            self._draw()
            self.stream.write("\n")
            self.stream.flush()
