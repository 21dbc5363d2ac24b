"""Shared text and content pools: the words, tools, prompts and identifiers the demo sessions draw from.

Everything here is a pure function of a seeded :class:`random.Random`, so the same seed writes the
same bytes.
"""

from __future__ import annotations

import base64
import random
import struct
import uuid
import zlib
from typing import Any

_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

_BASE62_TABLE = bytes(ord(_BASE62[i % 62]) for i in range(256))

SOURCES = ("build-farm", "laptop-ana", "research-cluster")
"""The three agent hosts the demo fleet reports from."""

SENTENCES = (
    "The ingest worker retries a batch when the broker drops the connection.",
    "Profiles are rebuilt from the event log whenever the state version changes.",
    "The parser keeps the line number so that every error names its place in the file.",
    "A compaction replaces the oldest turns with a summary the model can still follow.",
    "The cache key includes the tool list, so editing one description resets the prefix.",
    "We pin the dependency to the minor release until the regression is fixed upstream.",
    "The flaky test waits on a socket that the fixture closes too early.",
    "Each request carries at most four cache breakpoints.",
    "The migration adds an index on the session id and the sequence number.",
    "A tool result larger than the budget is truncated and the tail is summarised.",
    "The dashboard reads projection rows and never folds a whole store per request.",
    "Timestamps are stored in UTC and rendered in the viewer's zone.",
    "The retry budget is three attempts with exponential backoff and jitter.",
    "The benchmark prints the median of five runs after one warm-up run.",
    "Every import is idempotent, so running it twice adds nothing.",
    "The lint step fails on unused imports and on shadowed names.",
    "The container image is rebuilt nightly with the latest security patches.",
    "The queue is partitioned by source so one noisy host cannot starve the others.",
    "We keep the raw field names beside the normalized buckets for traceability.",
    "The summary keeps file paths, open questions and the decisions taken so far.",
    "The fixture factory writes the same bytes for the same seed.",
    "The config loader refuses an unknown key instead of ignoring it.",
    "Large diffs are shown side by side with the changed span highlighted.",
    "The scheduler skips a run when the previous one is still in progress.",
)

FILES = (
    "src/ingest/reader.py",
    "src/ingest/batches.py",
    "src/api/views.py",
    "src/api/schemas.py",
    "src/core/events.py",
    "src/core/surface.py",
    "tests/test_reader.py",
    "tests/test_surface.py",
    "docs/architecture.md",
    "pyproject.toml",
    "Makefile",
    "scripts/release.sh",
)

TASKS = (
    "Fix the failing test in tests/test_reader.py and explain the cause.",
    "Add a --dry-run flag to the release script.",
    "Refactor the batch writer so it streams instead of buffering the whole file.",
    "Find why the nightly build takes twice as long since Tuesday.",
    "Write a migration that backfills the missing session titles.",
    "Review the open pull request for the surface fold and list the risks.",
    "Add type hints to src/core/events.py and make mypy pass.",
    "Summarise the architecture document for a new team member.",
    "Investigate the memory growth in the ingest worker.",
    "Update the changelog for the 2.4 release.",
)

TOOL_NAMES = ("Bash", "Read", "Edit", "Grep", "Glob", "TodoWrite")

TITLE_LIMIT = 60
"""The longest session title the demo writes, ellipsis included."""


def session_title(task: str, limit: int = TITLE_LIMIT) -> str:
    """``task`` as a session title of at most ``limit`` characters: a longer one is cut at the last
    word boundary that fits and ends in "…", so no title stops mid-word without saying it was cut."""
    if len(task) <= limit:
        return task
    head = task[: limit - 1]
    if task[limit - 1] != " " and " " in head:
        head = head.rsplit(" ", 1)[0]  # the last word does not fit whole
    return head.rstrip(" ,.;:") + "…"


def paragraph(rng: random.Random, sentences: int) -> str:
    """``sentences`` sentences drawn from the pool, joined as one paragraph."""
    return " ".join(rng.choice(SENTENCES) for _ in range(sentences))


def numbered_file(rng: random.Random, path: str, lines: int) -> str:
    """A file listing as a Read tool returns it: numbered lines of plausible source."""
    body = []
    for n in range(1, lines + 1):
        words = rng.choice(SENTENCES).split()[: rng.randint(3, 9)]
        body.append(f"{n:>6}\u2192    # {' '.join(words)}")
    return f"{path}\n" + "\n".join(body)


def command_output(rng: random.Random, lines: int) -> str:
    """Output of a shell command: test runner and build lines."""
    out = []
    for n in range(lines):
        path = rng.choice(FILES)
        out.append(f"{path}:{rng.randint(1, 400)}: {rng.choice(SENTENCES)}" if n % 3 else f"PASSED {path}")
    return "\n".join(out)


def uuid4(rng: random.Random) -> str:
    """A version-4 UUID drawn from ``rng``."""
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def base62(rng: random.Random, length: int) -> str:
    """``length`` base-62 characters drawn from ``rng``."""
    return rng.randbytes(length).translate(_BASE62_TABLE).decode("ascii")


def message_id(rng: random.Random) -> str:
    """An Anthropic message id (``msg_01…``)."""
    return "msg_01" + base62(rng, 22)


def request_id(rng: random.Random) -> str:
    """An Anthropic request id (``req_011C…``)."""
    return "req_011C" + base62(rng, 20)


def tool_use_id(rng: random.Random) -> str:
    """An Anthropic tool_use id (``toolu_01…``)."""
    return "toolu_01" + base62(rng, 22)


def hex_id(rng: random.Random, length: int) -> str:
    """``length`` lowercase hex digits (agent ids, short hashes)."""
    return f"{rng.getrandbits(4 * length):0{length}x}"


def tool_definition(name: str, rng: random.Random, sentences: int) -> dict[str, Any]:
    """An Anthropic tool definition with a long description, as coding agents send them."""
    return {
        "name": name,
        "description": f"{name} tool. " + paragraph(rng, sentences),
        "input_schema": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Absolute path of the file or directory."},
                "command": {"type": "string", "description": "The command to run, when the tool runs one."},
            },
            "required": ["path"] if name in ("Read", "Edit", "Glob") else ["command"],
            "additionalProperties": False,
            "$schema": "http://json-schema.org/draft-07/schema#",
        },
    }


def system_prompt(rng: random.Random, sentences: int) -> str:
    """The long, stable part of a coding agent's system prompt."""
    rules = "\n".join(f"- {rng.choice(SENTENCES)}" for _ in range(sentences))
    return (
        "You are an interactive command-line tool that helps users with software engineering tasks.\n\n"
        "# Working rules\n" + rules + "\n\n# Environment\nPlatform: linux\nShell: bash\n"
    )


def tiny_png(rng: random.Random, side: int = 16) -> str:
    """A small valid PNG (a seeded colour gradient) as base64, for image blocks."""
    red, green, blue = rng.randrange(256), rng.randrange(256), rng.randrange(256)
    raw = b"".join(
        b"\x00" + b"".join(bytes(((red + x * 9) % 256, (green + y * 7) % 256, blue)) for x in range(side))
        for y in range(side)
    )

    def chunk(kind: bytes, payload: bytes) -> bytes:
        return (
            struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))
        )

    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )
    return base64.b64encode(png).decode("ascii")
