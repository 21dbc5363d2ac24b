"""A corpus of real Claude Code transcripts of a chosen size, for timing ingest against a plain parse.

The real transcripts under ``../shared/data/claude-code`` are copied as often as needed into
``<root>/projects/project-<n>/`` (the layout ``~/.claude/projects`` has, so ccusage reads the same
folder through ``CLAUDE_CONFIG_DIR``). Each copy gets its own session, agent and message ids, so the
ingest stores every copy as new sessions rather than skipping them as duplicates, and a
deduplicating reader such as ccusage counts every copy's calls.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_AGENT_ID = re.compile(rb'"agentId":"([^"]+)"')
_CALL_ID = re.compile(rb'"((?:msg|req)_[A-Za-z0-9]+)"')
_AGENT_FILE = re.compile(r"agent-([A-Za-z0-9-]+)\.jsonl$")


@dataclass(frozen=True)
class Corpus:
    root: Path
    """The folder holding ``projects/``: what ``CLAUDE_CONFIG_DIR`` points at."""
    projects: Path
    files: list[Path]
    bytes: int
    copies: int


def build_corpus(source: Path, root: Path, *, target_bytes: int) -> Corpus:
    """Copy the transcripts under ``source`` into ``root/projects`` until about ``target_bytes``."""
    originals = sorted(source.rglob("*.jsonl"))
    size = sum(path.stat().st_size for path in originals)
    if not originals or not size:
        raise ValueError(f"{source} holds no Claude Code transcripts")
    copies = max(1, round(target_bytes / size))
    projects = root / "projects"
    files: list[Path] = []
    for copy in range(copies):
        for original in originals:
            relative = _renamed(original.relative_to(source).as_posix(), copy)
            target = projects / f"project-{copy}" / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(_renumbered(original.read_bytes(), copy))
            files.append(target)
    return Corpus(root, projects, files, sum(path.stat().st_size for path in files), copies)


def _uuid(match: re.Match[bytes], copy: int) -> bytes:
    # The same uuid maps to the same new uuid everywhere in a copy, so parent links still hold.
    return match.group(0)[:-4] + b"%04x" % copy


def _renumbered(data: bytes, copy: int) -> bytes:
    data = _UUID.sub(lambda m: _uuid(m, copy), data)
    data = _AGENT_ID.sub(lambda m: b'"agentId":"' + m.group(1) + b"c%d" % copy + b'"', data)
    return _CALL_ID.sub(lambda m: b'"' + m.group(1) + b"c%d" % copy + b'"', data)


def _renamed(relative: str, copy: int) -> str:
    relative = _UUID.sub(lambda m: _uuid(m, copy), relative.encode()).decode()
    return _AGENT_FILE.sub(lambda m: f"agent-{m.group(1)}c{copy}.jsonl", relative)
