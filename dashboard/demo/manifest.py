"""The demo manifest: per file, its source and format and the sessions an importer should find in it,
with the counts it should report. Tests assert ingest results against it; ``manifest.json`` holds it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dashboard.demo.conversation import Call
from projections.normalized import Lineage

MANIFEST_NAME = "manifest.json"


@dataclass(frozen=True, slots=True)
class UsageTotals:
    """Provider-reported usage summed over a session's calls, in exclusive buckets.

    ``None`` where the provider reports no such figure (OpenAI reports no cache writes).
    """

    uncached_input: int | None
    cache_read: int | None
    cache_write: int | None
    output: int | None


@dataclass(frozen=True, slots=True)
class ExpectedSession:
    """One session as a file holds it, and what reading it must give.

    ``requests`` counts provider calls (one per Claude Code ``message.id``+``requestId``, excluding
    ``<synthetic>`` lines; one per dsh ``assistant/message`` with usage; one per capture line);
    ``requests_by_lineage`` splits it (inline sidechain calls, Haiku side calls). ``events`` is the
    dsh event count after packed chunk rows are expanded (``None`` for other formats).
    """

    external_id: str
    lineage: Lineage
    requests: int
    requests_by_lineage: Mapping[str, int]
    usage: UsageTotals
    events: int | None = None
    parent_external_id: str | None = None
    agent_id: str | None = None
    format_version: str = ""
    scenarios: tuple[str, ...] = ()
    surface: Mapping[str, int] = field(default_factory=dict)
    """dsh only: ``nodes`` retained at the end, ``meteredReplacements``, ``compactions``, ``prunes``,
    ``systemRewrites``, ``systemTokens`` and ``messageTokens`` of the final breakdown."""


@dataclass(frozen=True, slots=True)
class ManifestFile:
    """One written file with its source host, its format and the sessions it holds."""

    path: str
    """Relative to the dataset root, with forward slashes."""
    source: str
    format: str
    sessions: tuple[ExpectedSession, ...]


@dataclass(frozen=True, slots=True)
class DemoManifest:
    """Everything ``write_demo_dataset`` wrote."""

    seed: int
    sources: tuple[str, ...]
    files: tuple[ManifestFile, ...]

    @property
    def sessions(self) -> list[ExpectedSession]:
        """Every expected session of every file."""
        return [session for entry in self.files for session in entry.sessions]

    def files_of(self, fmt: str) -> list[ManifestFile]:
        """The files of one format."""
        return [entry for entry in self.files if entry.format == fmt]

    def to_json(self) -> dict[str, Any]:
        """The manifest as plain JSON data (lists, dicts, strings, numbers, null)."""
        data: dict[str, Any] = json.loads(json.dumps(asdict(self)))
        return data

    def write(self, root: Path) -> Path:
        """Write ``manifest.json`` under ``root``."""
        path = root / MANIFEST_NAME
        path.write_text(json.dumps(self.to_json(), indent=2) + "\n", encoding="utf-8")
        return path


def calls_usage(calls: Iterable[Call]) -> UsageTotals:
    """Anthropic usage summed over ``calls``."""
    listed = list(calls)
    return UsageTotals(
        uncached_input=sum(call.usage.uncached_input for call in listed),
        cache_read=sum(call.usage.cache_read for call in listed),
        cache_write=sum(call.usage.cache_write for call in listed),
        output=sum(call.output_tokens for call in listed),
    )


def lineage_counts(calls: Iterable[Call]) -> dict[str, int]:
    """How many of ``calls`` belong to each lineage."""
    counts: dict[str, int] = {}
    for call in calls:
        counts[call.lineage] = counts.get(call.lineage, 0) + 1
    return counts
