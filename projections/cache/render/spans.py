"""The smallest differing span of two texts: what an edit changed, for the causes and the pages.

Kept apart from the causes so that the request page's side-by-side view loads without the diff
engine the causes build on.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Span:
    """The smallest differing span: ``old[start:old_end]`` became ``new[start:new_end]``."""

    start: int
    old_end: int
    new_end: int


def smallest_span(old: str, new: str) -> Span:
    """Common prefix and common suffix stripped: what is left is the edit."""
    n = min(len(old), len(new))
    start = 0
    while start < n and old[start] == new[start]:
        start += 1
    old_end, new_end = len(old), len(new)
    while old_end > start and new_end > start and old[old_end - 1] == new[new_end - 1]:
        old_end -= 1
        new_end -= 1
    return Span(start, old_end, new_end)
