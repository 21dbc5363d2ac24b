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
PROJCACHE_NAME = "session_projcache.json"
"""A dsh host's own projection rows, beside its log; read with the log, never as a log."""


def is_log_name(name: str) -> bool:
    """Whether a folder walk reads a file of this name: a log suffix, not hidden, not a projection cache."""
    return not name.startswith(".") and name != PROJCACHE_NAME and name.endswith(LOG_SUFFIXES)
