"""Benchmark corpora: a large dsh corpus on disk for ingest, and a reference-shaped set of event logs
for re-folding (DESIGN §5.1: 836 sessions, about 151,000 retained surface nodes, about 2,200 metered
replacements and about 100 system-prompt rewrites, a few tool-heavy sessions near 2,000 nodes)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from dashboard.demo import pools
from dashboard.demo.cache_model import AnthropicCache
from dashboard.demo.clock import at, epoch_ms
from dashboard.demo.dsh_scenarios import (
    DshPlan,
    DshRun,
    compact,
    dsh_tools,
    open_session,
    prune,
    rewrite_system,
    run_plan,
    stamped_system,
    work_turn,
)
from dashboard.demo.formats.dsh_log import DshLog
from dashboard.demo.formats.dsh_writer import event_records, write_session
from dashboard.demo.scenarios import OPUS_41, SONNET
from projections.normalized import EventRecord

REFERENCE_SESSIONS = 836
REFERENCE_NODES = 151_000
REFERENCE_METERED = 2_206
REFERENCE_REWRITES = 106
REFERENCE_HEAVY = 6
"""Tool-heavy sessions of the reference corpus, each near 2,000 retained nodes."""

COMPACTION_SHARE = 6
"""One metered replacement in this many is a compaction; the others are tool-result prunings."""


@dataclass(frozen=True, slots=True)
class CorpusStats:
    """What ``write_corpus`` wrote."""

    files: int
    zstd_files: int
    sessions: int
    events: int
    bytes: int


@dataclass(frozen=True, slots=True)
class RefoldShape:
    """The planned shape of one re-fold session."""

    nodes: int
    compactions: int
    prunes: int
    rewrites: int
    heavy: bool


def write_corpus(root: Path, *, target_bytes: int, seed: int = 7) -> CorpusStats:
    """Write dsh logs (every third one multi-frame zstd) under ``root`` until about ``target_bytes``.

    One session is held in memory at a time, so memory stays flat however large the corpus.
    """
    rng = random.Random(seed)
    written = sessions = events = zstd_files = 0
    while written < target_bytes:
        source = pools.SOURCES[sessions % len(pools.SOURCES)]
        log = _corpus_log(rng, sessions)
        turns = rng.randint(3, 24)
        plan = DshPlan(
            turns=turns,
            steps=(1, 6),
            compact_after=(turns // 2,) if turns > 8 else (),
            prune_after=tuple(t for t in range(2, turns) if rng.random() < 0.2),
            rewrite_system=sessions % 11 == 5,
            cache_records=sessions % 7 == 3,
        )
        run_plan(DshRun(log), plan, log.system_text, (SONNET, OPUS_41))
        zstd = sessions % 3 == 2
        path = write_session(root / source / "dsh" / log.session_id, log, zstd=zstd)
        written += path.stat().st_size
        sessions += 1
        events += log.counts.events
        zstd_files += zstd
    return CorpusStats(files=sessions, zstd_files=zstd_files, sessions=sessions, events=events, bytes=written)


def refold_corpus(
    seed: int = 7, sessions: int = REFERENCE_SESSIONS
) -> Iterator[tuple[str, list[EventRecord]]]:
    """Yield ``(session id, events)`` for a corpus shaped like DESIGN §5.1's reference.

    Counts are planned up front and scaled with ``sessions``, so totals land close to the reference
    by construction: retained surface nodes (the final surface of each log), metered replacements
    (compactions and prunings, exactly metered) and unmetered system-prompt rewrites.
    """
    rng = random.Random(seed)
    for index, shape in enumerate(refold_shapes(rng, sessions)):
        log = _corpus_log(rng, index, chunks=False)
        _play_shape(DshRun(log, output_lines=(2, 8)), shape)
        yield log.session_id, list(event_records(log))


def refold_shapes(rng: random.Random, sessions: int) -> list[RefoldShape]:
    """The per-session plan of the re-fold corpus: node targets, metered replacements, rewrites."""
    scale = sessions / REFERENCE_SESSIONS
    heavy = min(sessions, max(1, round(REFERENCE_HEAVY * scale)))
    node_total = round(REFERENCE_NODES * scale)
    heavy_nodes = [rng.randint(1850, 2000) for _ in range(heavy)]
    # Capped so that only the tool-heavy sessions come near 2,000 nodes.
    weights = [min(rng.lognormvariate(0, 0.9), 8.0) for _ in range(sessions - heavy)]
    rest = _apportion(max(0, node_total - sum(heavy_nodes)), weights, minimum=8)
    nodes = heavy_nodes + rest
    metered = _apportion(round(REFERENCE_METERED * scale), [float(n) for n in nodes], minimum=0)
    candidates = [i for i, n in enumerate(nodes) if n >= 30]
    rewrites = [0] * sessions
    for pick in range(round(REFERENCE_REWRITES * scale)):
        rewrites[candidates[(pick * 7) % len(candidates)] if candidates else pick % sessions] += 1
    shapes = []
    for n, m, r in zip(nodes, metered, rewrites, strict=True):
        compactions = m // COMPACTION_SHARE if n >= 40 else 0
        shapes.append(
            RefoldShape(nodes=n, compactions=compactions, prunes=m - compactions, rewrites=r, heavy=n >= 1800)
        )
    order = list(range(sessions))
    rng.shuffle(order)
    return [shapes[i] for i in order]


def _play_shape(run: DshRun, shape: RefoldShape) -> None:
    """Grow the log phase by phase: each phase ends in a compaction except the last, which stops at
    the node target; prunings and rewrites are spread over the phases."""
    log, rng = run.log, run.log.rng
    base_system = log.system_text
    open_session(run, base_system)
    phases = shape.compactions + 1
    prunes = _apportion(shape.prunes, [1.0] * phases, minimum=0)
    rewrites = _apportion(shape.rewrites, [1.0] * phases, minimum=0)
    turn = 0
    for phase in range(phases):
        last = phase == phases - 1
        goal = shape.nodes if last else max(len(log.nodes) + 10, int(shape.nodes * 0.85))
        pruned = 0
        for _ in range(rewrites[phase]):
            rewrite_system(run, turn, stamped_system(base_system, turn, log.time_ms))
        while len(log.nodes) < goal:
            turn += 1
            room = goal - len(log.nodes)
            steps = rng.randint(4, 10) if shape.heavy else rng.randint(1, 3)
            steps = max(0, min(steps, (room - 2) // 2))
            work_turn(run, turn, steps, sentences=1)
            while (
                pruned < prunes[phase]
                and _prune_due(pruned, prunes[phase], goal - room, goal)
                and prune(run, turn)
            ):
                pruned += 1
        while pruned < prunes[phase] and prune(run, turn):
            pruned += 1
        if not last:
            compact(run, turn)


def _prune_due(done: int, wanted: int, before: int, goal: int) -> bool:
    return done < wanted * min(1.0, (before + 1) / max(1, goal))


def _corpus_log(rng: random.Random, index: int, *, chunks: bool = True) -> DshLog:
    return DshLog(
        session_id=pools.uuid4(rng),
        version=3 if index % 2 else 4,
        rng=rng,
        cache=AnthropicCache(),
        model=SONNET,
        time_ms=epoch_ms(at(86400 + index * 600)),
        tools=dsh_tools(rng),
        system_text=pools.system_prompt(rng, 20),
        cwd=f"/srv/agents/{index % 40}",
        title=pools.session_title(rng.choice(pools.TASKS)),
        chunks=chunks,
    )


def _apportion(total: int, weights: list[float], *, minimum: int) -> list[int]:
    """Split ``total`` into integers proportional to ``weights`` (largest remainder), each at least
    ``minimum`` when the total allows it."""
    if not weights:
        return []
    floor_total = minimum * len(weights)
    spare = max(0, total - floor_total)
    weight_sum = sum(weights) or 1.0
    raw = [spare * w / weight_sum for w in weights]
    parts = [minimum + int(x) for x in raw]
    leftover = total - sum(parts)
    by_remainder = sorted(range(len(weights)), key=lambda i: raw[i] - int(raw[i]), reverse=True)
    for i in by_remainder[: max(0, leftover)]:
        parts[i] += 1
    return parts
