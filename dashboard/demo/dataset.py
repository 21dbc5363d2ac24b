"""The demo dataset: about 30 sessions from three hosts, in every format Cachescope reads, spread
over six weeks so the overview shows days with and without work from the first start.

Each session keeps its time of day and is moved by whole days (:data:`DAY`); a subagent keeps its
parent's day. The days are fixed, not counted back from today, so the same seed writes the same
bytes on any day; the overview's ranges count back from now, so it says the demo's sessions lie
before its last 30 days and links to all time, where its six weeks show.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from pathlib import Path

from dashboard.demo import pools
from dashboard.demo.cache_model import AnthropicCache
from dashboard.demo.clock import at, compact_stamp, epoch_ms
from dashboard.demo.conversation import Call
from dashboard.demo.dsh_scenarios import DshPlan, DshRun, dsh_tools, run_plan
from dashboard.demo.formats.anthropic_capture import write_captures, write_connectome_log
from dashboard.demo.formats.claude_code import (
    TranscriptContext,
    prompt_line,
    synthetic_error,
    transcript_lines,
    write_transcript,
)
from dashboard.demo.formats.claude_trace import write_trace_log
from dashboard.demo.formats.dsh_log import DshLog
from dashboard.demo.formats.dsh_writer import projcache, write_projcache, write_session
from dashboard.demo.formats.openai_capture import OpenAIApi, openai_session, write_openai_captures
from dashboard.demo.manifest import (
    DemoManifest,
    ExpectedSession,
    ManifestFile,
    UsageTotals,
    calls_usage,
    lineage_counts,
)
from dashboard.demo.scenarios import (
    OPUS_41,
    SONNET,
    SONNET_45,
    ScriptedSession,
    compaction_session,
    drifting_prompt_session,
    edited_history_session,
    image_and_ttl_session,
    plain_session,
    subagent_session,
)

BUILD_FARM, LAPTOP, RESEARCH = pools.SOURCES
DAY = 86_400
SPAN_DAYS = 42
"""Six weeks from the first session's day to the last's."""


@dataclass(frozen=True, slots=True)
class DshSpec:
    """One dsh session of the dataset: where it lives, how it is stored, what it does."""

    source: str
    version: int
    plan: DshPlan
    zstd: bool = False
    with_projcache: bool = False
    parent_index: int | None = None


DSH_SPECS = (
    DshSpec(BUILD_FARM, 0, DshPlan(turns=3)),
    DshSpec(BUILD_FARM, 0, DshPlan(turns=5, compact_after=(3,)), zstd=True),
    DshSpec(BUILD_FARM, 3, DshPlan(turns=5, rewrite_system=True, cache_records=True)),
    DshSpec(
        BUILD_FARM,
        3,
        DshPlan(turns=6, prune_after=(2, 4), compact_after=(3,)),
        zstd=True,
        with_projcache=True,
    ),
    DshSpec(BUILD_FARM, 3, DshPlan(turns=4, switch_model_at=3)),
    DshSpec(
        BUILD_FARM,
        4,
        DshPlan(turns=7, compact_after=(2, 5), prune_after=(3,), cache_records=True),
        zstd=True,
        with_projcache=True,
    ),
    DshSpec(BUILD_FARM, 4, DshPlan(turns=4, retry_at=2, ignorable_at=3)),
    DshSpec(BUILD_FARM, 4, DshPlan(turns=3), zstd=True),
    DshSpec(BUILD_FARM, 3, DshPlan(turns=4, steps=(5, 9), prune_after=(1, 2, 3))),
    DshSpec(BUILD_FARM, 4, DshPlan(turns=4, rewrite_system=True, cache_records=True), zstd=True),
    DshSpec(RESEARCH, 3, DshPlan(turns=3)),
    DshSpec(RESEARCH, 4, DshPlan(turns=6, compact_after=(4,), prune_after=(2,)), with_projcache=True),
    DshSpec(RESEARCH, 4, DshPlan(turns=2, steps=(2, 4)), parent_index=11),
    DshSpec(RESEARCH, 0, DshPlan(turns=4), zstd=True),
    DshSpec(RESEARCH, 3, DshPlan(turns=6, compact_after=(3,), prune_after=(2, 5)), with_projcache=True),
    DshSpec(RESEARCH, 4, DshPlan(turns=5, rewrite_system=True, prune_after=(3,))),
    DshSpec(RESEARCH, 3, DshPlan(turns=4, switch_model_at=2, truncate_after=(3,)), zstd=True),
    DshSpec(RESEARCH, 4, DshPlan(turns=3, cache_records=True)),
)


def write_demo_dataset(root: Path, *, seed: int = 7) -> DemoManifest:
    """Write the demo dataset under ``root/<source>/...`` and ``root/manifest.json``.

    The same seed writes byte-identical files; nothing depends on the wall clock.
    """
    rng = random.Random(seed)
    caches = {source: AnthropicCache() for source in pools.SOURCES}
    files: list[ManifestFile] = []
    files += _write_dsh(root, rng, caches)
    files += _write_claude_code(root, rng, caches[LAPTOP])
    files += _write_traces(root, rng, caches)
    files += _write_captures(root, rng, caches[RESEARCH])
    files += _write_openai(root, rng)
    manifest = DemoManifest(seed=seed, sources=pools.SOURCES, files=tuple(files))
    manifest.write(root)
    return manifest


def _write_dsh(root: Path, rng: random.Random, caches: dict[str, AnthropicCache]) -> list[ManifestFile]:
    files: list[ManifestFile] = []
    ids = [pools.uuid4(rng) for _ in DSH_SPECS]
    for index, spec in enumerate(DSH_SPECS):
        start = at(DAY * _dsh_day(index) + 3600 * 2 + index * 1500)
        parent = ids[spec.parent_index] if spec.parent_index is not None else None
        log = DshLog(
            session_id=ids[index],
            version=spec.version,
            rng=rng,
            cache=caches[spec.source],
            model=SONNET,
            time_ms=epoch_ms(start),
            tools=dsh_tools(rng),
            system_text=pools.system_prompt(rng, 40),
            cwd=f"/srv/{spec.source}/work/{rng.choice(('ingest', 'api', 'docs'))}",
            title=pools.session_title(rng.choice(pools.TASKS)),
            parent=parent,
        )
        run_plan(DshRun(log), spec.plan, log.system_text, (SONNET, OPUS_41))
        directory = root / spec.source / "dsh" / log.session_id
        path = write_session(directory, log, zstd=spec.zstd)
        if spec.with_projcache:
            write_projcache(directory, log)
        files.append(ManifestFile(_rel(root, path), spec.source, "dsh", (_dsh_expected(log, spec),)))
    return files


def _dsh_day(index: int) -> int:
    """Every other day for the dsh sessions; a subagent on its parent's day."""
    parent = DSH_SPECS[index].parent_index
    return _dsh_day(parent) if parent is not None else index * 2


def _dsh_expected(log: DshLog, spec: DshSpec) -> ExpectedSession:
    counts = log.counts
    breakdown = projcache(log)["rows"]["contextBreakdown"]["val"]
    scenarios = [
        name
        for name, present in (
            ("compacted", counts.compactions > 0),
            ("pruned", counts.prunes > 0),
            ("system-rewrites", counts.system_rewrites > 0),
            ("unmetered-truncation", counts.unmetered_replacements > 0),
            ("model-changed", spec.plan.switch_model_at is not None),
            ("cache-records", spec.plan.cache_records),
            ("subagent", log.parent is not None),
        )
        if present
    ]
    return ExpectedSession(
        external_id=log.session_id,
        lineage="subagent" if log.parent else "main",
        requests=counts.requests,
        requests_by_lineage={"subagent" if log.parent else "main": counts.requests},
        usage=UsageTotals(counts.uncached_input, counts.cache_read, counts.cache_write, counts.output),
        events=counts.events,
        parent_external_id=log.parent,
        format_version=str(log.version),
        scenarios=tuple(scenarios),
        surface={
            "nodes": len(log.nodes),
            "meteredReplacements": counts.metered_replacements,
            "compactions": counts.compactions,
            "prunes": counts.prunes,
            "systemRewrites": counts.system_rewrites,
            "unmeteredReplacements": counts.unmetered_replacements,
            "systemTokens": breakdown["systemTokens"],
            "messageTokens": breakdown["messageTokens"],
        },
    )


CLAUDE_CODE_SESSIONS = (
    # project, client version, script, start (s after the epoch), inline sidechain, synthetic line
    ("ingest", "2.1.39", "subagent", DAY * 3 + 1800, False, False),
    ("ingest", "2.1.39", "compaction", DAY * 10 + 9000, False, False),
    ("ingest", "1.0.108", "subagent", DAY * 17 + 16000, True, False),
    ("dashboard", "2.1.38", "plain-long", DAY * 24 + 23000, False, True),
    ("dashboard", "2.1.38", "plain", DAY * 31 + 30000, False, False),
    ("dashboard", "1.0.108", "plain-sonnet-4", DAY * 38 + 36000, False, False),
)


def _script(name: str, rng: random.Random, cache: AnthropicCache, start_s: float) -> ScriptedSession:
    if name == "subagent":
        return subagent_session(rng, cache, start_s)
    if name == "compaction":
        return compaction_session(rng, cache, start_s)
    if name == "plain-long":
        return plain_session(rng, cache, start_s, model=SONNET_45, turns=3)
    if name == "plain":
        return plain_session(rng, cache, start_s, model=SONNET_45)
    return plain_session(rng, cache, start_s)


def _write_claude_code(root: Path, rng: random.Random, cache: AnthropicCache) -> list[ManifestFile]:
    """Transcripts as Claude Code lays them out: ``<project>/<session>.jsonl`` with subagent files
    in ``<session>/subagents/`` (or, for the old client, inline ``isSidechain`` lines).

    External ids follow the importer: the session uuid, ``agent-<id>`` for a subagent file and
    ``sidechain-<root uuid>`` for an inline sidechain.
    """
    files: list[ManifestFile] = []
    for project, version, script, start_s, inline, synthetic in CLAUDE_CODE_SESSIONS:
        scripted = _script(script, rng, cache, start_s)
        cwd = f"/home/ana/src/{project}"
        folder = root / LAPTOP / "claude" / "projects" / cwd.replace("/", "-")
        hooks = not version.startswith("1.")
        ctx = TranscriptContext(
            rng=rng, session_id=scripted.session_id, cwd=cwd, version=version, hooks=hooks
        )
        main_calls = [c for c in scripted.conversation.calls if c.lineage != "side"]
        side_sessions: list[ExpectedSession] = []
        for sub in scripted.subagents:
            sub_ctx = TranscriptContext(
                rng=rng, session_id=scripted.session_id, cwd=cwd, version=version, sidechain=True, hooks=hooks
            )
            if not inline:
                sub_ctx.agent_id = sub.agent_id
            sub_lines = transcript_lines(sub.conversation, sub_ctx)
            kind = "compaction-call" if sub.agent_id.startswith("acompact") else "subagent"
            if inline:
                ctx.inline[_task_tool_id(main_calls)] = sub_lines
                external_id = f"sidechain-{sub_lines[0]['uuid']}"
                side_sessions.append(
                    _subagent_expected(external_id, scripted, sub.conversation.calls, version, kind)
                )
                continue
            sub_path = folder / scripted.session_id / "subagents" / f"agent-{sub.agent_id}.jsonl"
            write_transcript(sub_path, sub_lines)
            expected = _subagent_expected(
                f"agent-{sub.agent_id}", scripted, sub.conversation.calls, version, kind
            )
            if kind == "compaction-call":
                # The importer knows the compaction subagent's file by its name: its calls are the
                # compaction's lineage.
                expected = replace(expected, requests_by_lineage={"compaction": expected.requests})
            files.append(ManifestFile(_rel(root, sub_path), LAPTOP, "claude-code", (expected,)))
        lines = transcript_lines(scripted.conversation, ctx)
        scenarios = list(scripted.scenarios) + (["inline-sidechain"] if inline else [])
        if synthetic:
            moment = scripted.conversation.calls[-1].finished
            lines.append(prompt_line(ctx, moment, "continue"))
            lines.append(synthetic_error(ctx, moment, 'API Error: 529 {"type":"overloaded_error"}'))
            scenarios.append("synthetic")
        path = folder / f"{scripted.session_id}.jsonl"
        write_transcript(path, lines)
        main = _calls_expected(scripted.session_id, main_calls, scenarios, version)
        files.append(ManifestFile(_rel(root, path), LAPTOP, "claude-code", (main, *side_sessions)))
    return files


def _subagent_expected(
    external_id: str, parent: ScriptedSession, calls: list[Call], version: str, kind: str
) -> ExpectedSession:
    return ExpectedSession(
        external_id=external_id,
        lineage="subagent",
        requests=len(calls),
        requests_by_lineage=lineage_counts(calls),
        usage=calls_usage(calls),
        parent_external_id=parent.session_id,
        agent_id=external_id.removeprefix("agent-") if external_id.startswith("agent-") else None,
        format_version=version,
        scenarios=(kind,),
    )


def _task_tool_id(calls: list[Call]) -> str:
    for call in calls:
        for block in call.content:
            if block.get("type") == "tool_use" and block.get("name") == "Task":
                return str(block["id"])
    raise ValueError("inline sidechain: the main conversation has no Task tool call")


def _write_traces(root: Path, rng: random.Random, caches: dict[str, AnthropicCache]) -> list[ManifestFile]:
    stories = [
        (BUILD_FARM, image_and_ttl_session(rng, caches[BUILD_FARM], DAY * 6 + 600)),
        (LAPTOP, drifting_prompt_session(rng, caches[LAPTOP], DAY * 20 + 42000)),
        (RESEARCH, edited_history_session(rng, caches[RESEARCH], DAY * (SPAN_DAYS - 1) + 5400)),
    ]
    files = []
    for source, scripted in stories:
        calls = scripted.conversation.calls
        path = root / source / "claude-trace" / f"log-{compact_stamp(calls[0].started)}.jsonl"
        write_trace_log(path, calls)
        expected = _calls_expected(_stem(path), calls, scripted.scenarios)
        files.append(ManifestFile(_rel(root, path), source, "claude-trace", (expected,)))
    return files


def _write_captures(root: Path, rng: random.Random, cache: AnthropicCache) -> list[ManifestFile]:
    proxy = plain_session(rng, cache, DAY * 13 + 12000, model=SONNET_45, turns=3)
    connectome = plain_session(rng, cache, DAY * 27 + 20000, turns=2)
    proxy_calls = proxy.conversation.calls
    connectome_calls = connectome.conversation.calls
    proxy_path = root / RESEARCH / "captures" / f"anthropic-{compact_stamp(proxy_calls[0].started)}.jsonl"
    connectome_path = (
        root / RESEARCH / "connectome" / f"llm-calls.{compact_stamp(connectome_calls[0].started)}.jsonl"
    )
    write_captures(proxy_path, proxy_calls)
    write_connectome_log(connectome_path, connectome_calls)
    proxy_expected = _calls_expected(_stem(proxy_path), proxy_calls, ())
    connectome_expected = _calls_expected(_stem(connectome_path), connectome_calls, ())
    return [
        ManifestFile(_rel(root, proxy_path), RESEARCH, "anthropic-capture", (proxy_expected,)),
        ManifestFile(_rel(root, connectome_path), RESEARCH, "connectome", (connectome_expected,)),
    ]


def _calls_expected(
    external_id: str, calls: list[Call], scenarios: list[str] | tuple[str, ...], version: str = ""
) -> ExpectedSession:
    return ExpectedSession(
        external_id=external_id,
        lineage="main",
        requests=len(calls),
        requests_by_lineage=lineage_counts(calls),
        usage=calls_usage(calls),
        format_version=version,
        scenarios=tuple(scenarios),
    )


def _write_openai(root: Path, rng: random.Random) -> list[ManifestFile]:
    files = []
    specs: tuple[tuple[OpenAIApi, str, int], ...] = (
        ("chat", "gpt-4.1-2025-04-14", 9),
        ("responses", "gpt-5-2025-08-07", 7),
    )
    for offset, (api, model, turns) in enumerate(specs):
        start_s = DAY * (15 + offset * 19) + 7200 + offset * 3000
        session = openai_session(rng, api=api, model=model, turns=turns, start_s=start_s)
        path = root / BUILD_FARM / "openai" / f"{api}-{compact_stamp(at(start_s))}.jsonl"
        write_openai_captures(path, session)
        usage = UsageTotals(
            uncached_input=sum(c.prompt_tokens - c.cached_tokens for c in session.calls),
            cache_read=sum(c.cached_tokens for c in session.calls),
            cache_write=None,
            output=sum(c.output_tokens for c in session.calls),
        )
        expected = ExpectedSession(
            external_id=_stem(path),
            lineage="main",
            requests=len(session.calls),
            requests_by_lineage={"main": len(session.calls)},
            usage=usage,
            format_version=api,
            scenarios=("automatic-cache", "ttl-expired"),
        )
        files.append(ManifestFile(_rel(root, path), BUILD_FARM, "openai-capture", (expected,)))
    return files


def _stem(path: Path) -> str:
    """A pairs file's session id, as the importer derives it: the file name without ``.jsonl``."""
    return path.name.removesuffix(".jsonl")


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()
