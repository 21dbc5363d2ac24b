"""A session's title as the readers give it: a line of text the operator can recognise the session
by, from what its writer named it or else the first thing its user asked.

Each reader knows where its writer keeps a name (a Claude Code ``summary`` or ``custom-title`` line,
a harness ``session/title`` event); every reader falls back to the first prompt the user typed, made
one line here so the list, the search and the exports see the same text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from projections.normalized import JSON

TITLE_LENGTH: Final = 120
"""The characters a title keeps: a list row shows about 60, the page heading the rest."""

_COMMAND = re.compile(r"<command-name>\s*(?P<name>[^<]*?)\s*</command-name>", re.DOTALL)
_ARGS = re.compile(r"<command-args>\s*(?P<args>.*?)\s*</command-args>", re.DOTALL)


def one_line(text: str) -> str:
    """``text`` with its runs of whitespace made single spaces, cut to :data:`TITLE_LENGTH`."""
    return " ".join(text.split())[:TITLE_LENGTH]


def blocks_text(content: JSON) -> str:
    """The text of a message's content: the string itself, or its text blocks joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = (
        block.get("text")
        for block in content
        if isinstance(block, dict) and block.get("type") in ("text", "input_text")
    )
    return " ".join(text for text in texts if isinstance(text, str))


def prompt_title(text: str) -> str:
    """The title a typed prompt gives its session: one line of it, a slash command as the user typed
    it (``/review src/app.py``, not the ``<command-name>`` markup Claude Code stores)."""
    command = _COMMAND.search(text)
    if command is not None:
        args = _ARGS.search(text)
        text = f"{command['name']} {args['args'] if args else ''}"
    return one_line(text)


def first_title(candidates: Iterable[str]) -> str:
    """The first non-empty title of ``candidates``, in order of preference; "" when none is."""
    return next((title for title in candidates if title), "")
