"""The names of the formats the importers read, and the file names a folder walk reads.

Plain constants apart from :mod:`projections.formats`, whose import loads every reader: the ingest
command's ``--help`` and the upload form only list the names.
"""

from __future__ import annotations

FORMAT_NAMES: tuple[str, ...] = (
    "dsh",
    "claude-code",
    "claude-trace",
    "codex",
    "anthropic-capture",
    "connectome",
    "openai-capture",
)
LOG_SUFFIXES = (".jsonl", ".ndjson", ".jsonl.zstd", ".jsonl.zst", ".zstd", ".zst")
"""Names a folder walk reads; anything else there (README, .DS_Store, projection caches) is skipped."""
