"""Deterministic prose for the request bodies the benchmarks generate: the same words each run, and
every sentence tagged with its number, so that no two generated messages hash alike."""

from __future__ import annotations

WORDS = (
    "the",
    "cache",
    "holds",
    "every",
    "prefix",
    "it",
    "wrote",
    "until",
    "the",
    "entry",
    "expires",
    "or",
    "a",
    "byte",
    "before",
    "it",
    "changes",
)


def sentence(i: int, words: int) -> str:
    """``words`` words of the cycle, starting at word ``i``, ending with ``(i).``"""
    return " ".join(WORDS[(i + k) % len(WORDS)] for k in range(words)) + f" ({i})."
