"""What dsh sessions do: turns of tool steps, compactions, tool-result prunings, system-prompt
rewrites, model switches and Cachescope's own cache records, written through :class:`DshLog`."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

from dashboard.demo import pools
from dashboard.demo.formats.dsh_log import HASH_SCHEME, DshLog

DSH_TOOLS = ("read_file", "run_shell", "search", "edit_file", "screenshot")
PRUNED_TEXT = "[tool output pruned to save context]"


@dataclass(frozen=True, slots=True)
class DshPlan:
    """The shape of one dsh session: its size and the surface operations it performs."""

    turns: int
    steps: tuple[int, int] = (1, 3)
    compact_after: tuple[int, ...] = ()
    prune_after: tuple[int, ...] = ()
    truncate_after: tuple[int, ...] = ()
    """Turns after which a tool result is cut in place without a meter (state version 6 drifts)."""
    rewrite_system: bool = False
    """Rewrite the system prompt (a timestamp line) at the start of every turn after the first."""
    cache_records: bool = False
    switch_model_at: int | None = None
    retry_at: int | None = None
    ignorable_at: int | None = None
    text_sentences: int = 3


@dataclass(slots=True)
class DshRun:
    """Builder state a script needs besides the log: which surface nodes are tool results."""

    log: DshLog
    tool_nodes: dict[int, tuple[str, str]] = field(default_factory=dict)
    previous_total: int = 0
    output_lines: tuple[int, int] = (5, 30)
    """How many lines a tool's output has, at least and at most."""


def dsh_tools(rng: random.Random) -> list[dict[str, object]]:
    """Tool definitions as a dsh request header lists them."""
    return [
        {
            "name": name,
            "description": pools.paragraph(rng, 4),
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        }
        for name in DSH_TOOLS
    ]


def open_session(run: DshRun, system_text: str) -> None:
    """The opening events: the request header and (version 3 and later) the first system prompt."""
    log = run.log
    log.request_header("initial")
    if log.version >= 3:
        message = {"role": "system", "content": system_text}
        log.append("system/message", {"turn": 0, "step": 0, "message": message})
    log.flush()


def work_turn(run: DshRun, turn: int, steps: int, *, sentences: int = 3, cache_records: bool = False) -> None:
    """A user turn: the prompt, ``steps`` tool steps and a closing answer, as one append batch."""
    log, rng = run.log, run.log.rng
    log.emit("turn/start", {"turn": turn}, dt_ms=rng.randint(20_000, 90_000))
    prompt = rng.choice(pools.TASKS)
    log.append(
        "user/message",
        {"id": f"u{turn}", "role": "user", "content": prompt, "source": {"kind": "user"}},
        {"role": "user", "content": prompt},
    )
    for step in range(steps + 1):
        assistant_step(run, turn, step, tool=step < steps, sentences=sentences, cache_records=cache_records)
    log.emit("turn/end", {"turn": turn})
    log.flush()


def assistant_step(
    run: DshRun, turn: int, step: int, *, tool: bool, sentences: int, cache_records: bool
) -> None:
    """One model call: chunk rows, the assistant message with its usage, and the tool round trip."""
    log, rng = run.log, run.log.rng
    log.emit("step/start", {"turn": turn, "step": step})
    usage = log.bill()
    text = pools.paragraph(rng, rng.randint(1, sentences))
    blocks: list[dict[str, object]] = []
    if rng.random() < 0.3:
        thought = pools.paragraph(rng, 1)
        blocks.append({"type": "reasoning", "text": thought})
        log.packed("reasoning-chunks", _pieces(thought), {"turn": turn, "step": step, "index": 0})
    blocks.append({"type": "text", "text": text})
    log.packed("text-chunks", _pieces(text), {"turn": turn, "step": step, "index": len(blocks) - 1})
    call_id = name = ""
    if tool:
        name = rng.choice(DSH_TOOLS)
        call_id = "call_" + pools.base62(rng, 24)
        arguments = json.dumps({"path": rng.choice(pools.FILES)})
        blocks.append({"type": "tool-call", "toolCallId": call_id, "toolName": name, "arguments": arguments})
        call = {"turn": turn, "step": step, "index": len(blocks) - 1, "id": call_id, "name": name}
        log.packed("tool-call-chunks", _pieces(arguments), call)
    message = {"role": "assistant", "content": blocks}
    output = sum(len(str(b.get("text", b.get("arguments", "")))) for b in blocks) // 4 + rng.randint(3, 40)
    seq = log.append(
        "assistant/message",
        {"turn": turn, "step": step, "message": message, "usage": log.record_usage(usage, output)},
    )
    if cache_records:
        cache_events(run, seq, usage.cache_read)
    if tool:
        log.emit("tool/call", {"turn": turn, "step": step, "toolCallId": call_id, "toolName": name})
        result = tool_result_block(rng, call_id, name, run.output_lines)
        tool_message = {"role": "tool", "content": [result]}
        tool_seq = log.append(
            "tool/result", {"turn": turn, "step": step, "message": tool_message}, dt_ms=rng.randint(200, 4000)
        )
        run.tool_nodes[tool_seq] = (call_id, name)
    log.emit("step/end", {"turn": turn, "step": step, "finishReason": "tool-calls" if tool else "stop"})


def tool_result_block(
    rng: random.Random, call_id: str, name: str, lines: tuple[int, int] = (5, 30)
) -> dict[str, object]:
    """A tool-result block: file text or command output, or a screenshot image."""
    inner: list[dict[str, object]]
    if name == "screenshot":
        inner = [
            {"type": "text", "text": "Screenshot of the dashboard:"},
            {"type": "image", "mediaType": "image/png", "data": pools.tiny_png(rng, 8)},
        ]
    elif name == "read_file":
        inner = [
            {"type": "text", "text": pools.numbered_file(rng, rng.choice(pools.FILES), rng.randint(*lines))}
        ]
    else:
        inner = [{"type": "text", "text": pools.command_output(rng, rng.randint(*lines))}]
    return {"type": "tool-result", "toolCallId": call_id, "toolName": name, "content": inner}


def cache_events(run: DshRun, request_seq: int, cache_read: int) -> None:
    """Cachescope's own records for a request: its render record, the client's credit, a host log line.

    After a system-prompt rewrite the naive client still credits the whole previous prompt, which
    the provider cannot serve: the dashboard's over-credit warning.
    """
    log = run.log
    ref = f"seq-{request_seq}"
    markers = log.marker_layout()
    log.emit(
        "cache/render-record",
        {"requestRef": ref, "hashScheme": HASH_SCHEME, "markers": markers},
        ignorable=True,
    )
    credited = max(cache_read, run.previous_total) if log.nodes and log.nodes[0].system else cache_read
    offsets = [{"ordinal": m["ordinal"], "offset": m["estimatedOffset"]} for m in markers]
    log.emit(
        "cache/credit", {"requestRef": ref, "creditedTokens": credited, "markers": offsets}, ignorable=True
    )
    if log.rng.random() < 0.3:
        line = f"[kv-unified] {ref}: reused {cache_read} tokens, {len(markers)} markers kept"
        log.emit("cache/log", {"level": "info", "line": line}, ignorable=True)
    run.previous_total = markers[-1]["estimatedOffset"] if markers else 0


def rewrite_system(run: DshRun, turn: int, text: str) -> None:
    """An unmetered replacement of the retained system prompt by a new one at the same position."""
    log = run.log
    position = next(i for i, node in enumerate(log.nodes) if node.system)
    log.replace(
        "system/message",
        {"turn": turn, "step": 0, "message": {"role": "system", "content": text}},
        {"role": "system", "content": text},
        position,
        position,
    )
    log.counts.system_rewrites += 1


def compact(run: DshRun, turn: int, *, keep: int = 2) -> bool:
    """A compaction: start, a summary metering the replaced range, the checkpoint, end.

    Replaces everything after the system prompt except the last ``keep`` nodes; returns False when
    the surface is too short to compact.
    """
    log = run.log
    start = 1 if log.nodes and log.nodes[0].system else 0
    end = len(log.nodes) - 1 - keep
    if end - start < 1:
        return False
    compaction_id = f"cmp-{log.next_seq}"
    shadowed = [node.seq for node in log.nodes[start : end + 1]]
    log.emit("compaction/start", {"compactionId": compaction_id, "turn": turn})
    summary = "Summary of the work so far: " + pools.paragraph(log.rng, 4)
    data = {
        "compactionId": compaction_id,
        "summary": summary,
        "shadowedRange": {"start": start, "end": end},
        "shadowedSeqs": shadowed,
        "shadowedTokenCount": log.range_price(start, end),
        "provider": "anthropic",
        "model": log.model,
    }
    log.emit("compaction/summary", data, dt_ms=4000)
    checkpoint = {
        "id": f"compact-{compaction_id}",
        "role": "user",
        "content": summary,
        "source": {"kind": "plugin", "plugin": "compact"},
    }
    log.replace("user/message", checkpoint, {"role": "user", "content": summary}, start, end)
    log.emit("compaction/end", {"compactionId": compaction_id, "turn": turn})
    for seq in shadowed:
        run.tool_nodes.pop(seq, None)
    log.counts.compactions += 1
    log.counts.metered_replacements += 1
    log.flush()
    return True


def prune(run: DshRun, turn: int) -> bool:
    """A tool-result pruning: ``compaction/prune`` then a one-node ``tool/result`` replace.

    Prunes the oldest tool result not pruned yet; returns False when there is none.
    """
    log = run.log
    position = next(
        (i for i, node in enumerate(log.nodes) if node.seq in run.tool_nodes),
        None,
    )
    if position is None:
        return False
    node = log.nodes[position]
    call_id, name = run.tool_nodes.pop(node.seq)
    data = {
        "shadowedRange": {"start": position, "end": position},
        "shadowedSeqs": [node.seq],
        "shadowedTokenCount": node.price,
    }
    log.emit("compaction/prune", data)
    block = {
        "type": "tool-result",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": PRUNED_TEXT}],
    }
    message = {"role": "tool", "content": [block]}
    # The placeholder is not registered as a tool node, so a result is never pruned twice.
    log.replace("tool/result", {"turn": turn, "step": 0, "message": message}, message, position, position)
    log.counts.prunes += 1
    log.counts.metered_replacements += 1
    return True


TRUNCATED_SUFFIX = "\n[output truncated to save context]"


def truncate_unmetered(run: DshRun, turn: int) -> bool:
    """A harness that cuts the oldest tool result in place with no metering event before it.

    DESIGN §5.1: version 5 subtracts the old price exactly, version 6 folds it at zero delta and
    drifts by the price difference from here on. Returns False when there is no tool result left.
    """
    log = run.log
    position = next((i for i, node in enumerate(log.nodes) if node.seq in run.tool_nodes), None)
    if position is None:
        return False
    node = log.nodes[position]
    call_id, name = run.tool_nodes.pop(node.seq)
    block = {
        "type": "tool-result",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": "(first lines kept)" + TRUNCATED_SUFFIX}],
    }
    message = {"role": "tool", "content": [block]}
    log.replace("tool/result", {"turn": turn, "step": 0, "message": message}, message, position, position)
    log.counts.unmetered_replacements += 1
    return True


def stamped_system(base: str, turn: int, time_ms: int) -> str:
    """The system prompt with the per-turn timestamp line that defeats the cache."""
    return f"{base}\nTurn {turn}. Current time (epoch ms): {time_ms}"


def run_plan(run: DshRun, plan: DshPlan, system_text: str, models: tuple[str, str]) -> None:
    """Play ``plan`` into ``run.log`` from the opening events to the last turn."""
    log = run.log
    open_session(run, stamped_system(system_text, 0, log.time_ms) if plan.rewrite_system else system_text)
    for turn in range(1, plan.turns + 1):
        if plan.rewrite_system and turn > 1 and log.version >= 3:
            rewrite_system(run, turn, stamped_system(system_text, turn, log.time_ms))
        if plan.switch_model_at == turn:
            log.change_model(models[1])
        if plan.retry_at == turn:
            log.emit("llm/retry", {"attempt": 1, "error": "overloaded_error", "delayMs": 2000})
        if plan.ignorable_at == turn:
            log.emit("ui/notice", {"text": "Context is 80% full"}, ignorable=True)
        work_turn(
            run,
            turn,
            log.rng.randint(*plan.steps),
            sentences=plan.text_sentences,
            cache_records=plan.cache_records,
        )
        if turn in plan.prune_after:
            prune(run, turn)
        if turn in plan.truncate_after:
            truncate_unmetered(run, turn)
        if turn in plan.compact_after:
            compact(run, turn)


def _pieces(text: str) -> list[str]:
    return [text[i : i + 16] for i in range(0, len(text), 16)] or [""]
