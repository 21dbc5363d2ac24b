"""The request-level stories of the demo: coding sessions and the cache events that happen in them.

Each script drives a :class:`Conversation` and returns it with its timeline; the format writers
decide how the calls are written down. The scenarios are real in the request bytes: an image block
that becomes a placeholder at the same position, a tool result whose content changes under the same
tool_use id, a system prompt with a per-request timestamp, a pause longer than the 5-minute TTL, an
edit in the middle of the history, a changed tool list, a model switch, and Haiku side calls below
the cache minimum.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from dashboard.demo import pools
from dashboard.demo.cache_model import AnthropicCache
from dashboard.demo.conversation import AgentProfile, Conversation

SONNET = "claude-sonnet-4-20250514"
SONNET_45 = "claude-sonnet-4-5-20250929"
OPUS_41 = "claude-opus-4-1-20250805"
OPUS_46 = "claude-opus-4-6"
HAIKU = "claude-3-5-haiku-20241022"

TTL_GAP_S = 420.0
"""A pause longer than the 5-minute TTL."""


@dataclass(slots=True)
class Subagent:
    """A subagent's conversation, launched from a Task tool call of its parent."""

    agent_id: str
    conversation: Conversation


@dataclass(slots=True)
class ScriptedSession:
    """A main conversation with its subagents and the scenarios it contains."""

    session_id: str
    conversation: Conversation
    subagents: list[Subagent] = field(default_factory=list)
    scenarios: list[str] = field(default_factory=list)


def coding_profile(rng: random.Random, model: str, *, user_id: str, **options: Any) -> AgentProfile:
    """A coding agent's profile: an identity line, a long rule block and six long tool definitions."""
    tools = [pools.tool_definition(name, rng, 28) for name in pools.TOOL_NAMES]
    system = ["You are a coding agent running in the user's terminal.", pools.system_prompt(rng, 30)]
    return AgentProfile(model=model, system=system, tools=tools, user_id=user_id, **options)


def side_profile(*, user_id: str, stream: bool) -> AgentProfile:
    """The small-model profile for title and quota calls: far below Haiku's 2,048-token minimum."""
    system = ["Analyze if this message indicates a new conversation topic. Reply with a short title."]
    return AgentProfile(
        model=HAIKU,
        system=system if stream else [],
        tools=[],
        stream=stream,
        max_tokens=512 if stream else 1,
        user_id=user_id,
    )


def tool_step(conv: Conversation, rng: random.Random, *, tools: int = 1) -> None:
    """One agent step: a reply with tool calls, then their results."""
    uses = []
    for _ in range(tools):
        name = rng.choice(("Bash", "Read", "Grep"))
        path = rng.choice(pools.FILES)
        uses.append((name, {"command": f"pytest -q {path}"} if name == "Bash" else {"path": path}))
    conv.respond(pools.paragraph(rng, 1) if rng.random() < 0.6 else None, uses)
    outputs = []
    for tool_id, (name, args) in zip(conv.last_tool_use_ids(), uses, strict=True):
        lines = rng.randint(8, 40)
        text = (
            pools.numbered_file(rng, args["path"], lines)
            if name == "Read"
            else pools.command_output(rng, lines)
        )
        outputs.append((tool_id, text))
    conv.tool_results(outputs)


def work_turn(
    conv: Conversation, rng: random.Random, *, steps: int, side: AgentProfile | None = None
) -> None:
    """A user turn: a prompt, an optional side call, ``steps`` tool steps and a closing answer."""
    task = rng.choice(pools.TASKS)
    conv.prompt(task)
    if side is not None:
        conv.side_call(side, task, "Fixing a failing reader test")
    for _ in range(steps):
        tool_step(conv, rng)
    conv.respond(pools.paragraph(rng, 3))
    conv.wait(rng.uniform(20, 140))


def new_conversation(
    rng: random.Random, cache: AnthropicCache, profile: AgentProfile, start_s: float
) -> Conversation:
    """An empty conversation that starts at ``start_s`` seconds after the demo epoch."""
    return Conversation(rng=rng, cache=cache, profile=profile, now_s=start_s)


def image_and_ttl_session(rng: random.Random, cache: AnthropicCache, start_s: float) -> ScriptedSession:
    """Sonnet with Haiku side calls: a pasted screenshot later stripped in place, a tool result
    replaced under the same id, and a pause that outlives the 5-minute TTL."""
    user = pools.hex_id(rng, 64)
    conv = new_conversation(rng, cache, coding_profile(rng, SONNET, user_id=user), start_s)
    quota = side_profile(user_id=user, stream=False)
    topic = side_profile(user_id=user, stream=True)
    conv.side_call(quota, "quota", "A")
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": pools.tiny_png(rng)},
    }
    conv.prompt([{"type": "text", "text": "The chart in this screenshot renders blank. Why?"}, image])
    conv.side_call(topic, "The chart renders blank", "Blank chart rendering")
    tool_step(conv, rng)
    tool_step(conv, rng)
    replaced_id = conv.messages[-1]["content"][0]["tool_use_id"]
    conv.respond(pools.paragraph(rng, 3))
    conv.wait(45)
    conv.prompt("Thanks. Drop the screenshot from the context and keep going with the fix.")
    conv.respond(None, [("Read", {"path": "src/api/views.py"})])
    conv.tool_results([(conv.last_tool_use_ids()[0], pools.numbered_file(rng, "src/api/views.py", 30))])
    conv.strip_image()
    tool_step(conv, rng)
    conv.replace_tool_result(replaced_id, "[output superseded: the file was edited afterwards]")
    conv.respond(pools.paragraph(rng, 2))
    conv.wait(TTL_GAP_S)
    work_turn(conv, rng, steps=2, side=topic)
    scenarios = ["haiku-side-calls", "image-stripped", "tool-result-replaced", "ttl-expired"]
    return ScriptedSession(session_id=pools.uuid4(rng), conversation=conv, scenarios=scenarios)


def drifting_prompt_session(rng: random.Random, cache: AnthropicCache, start_s: float) -> ScriptedSession:
    """A system prompt that carries the current time (it changes on every request), then a tool
    list change and a switch from Sonnet to Opus."""
    profile = coding_profile(rng, SONNET, user_id=pools.hex_id(rng, 64), system_clock=True, stream=False)
    conv = new_conversation(rng, cache, profile, start_s)
    work_turn(conv, rng, steps=3)
    tools = [*profile.tools, pools.tool_definition("WebFetch", rng, 12)]
    conv.change_tools(tools)
    work_turn(conv, rng, steps=2)
    conv.change_model(OPUS_41)
    work_turn(conv, rng, steps=2)
    scenarios = ["system-timestamp", "tools-changed", "model-changed"]
    return ScriptedSession(session_id=pools.uuid4(rng), conversation=conv, scenarios=scenarios)


def edited_history_session(rng: random.Random, cache: AnthropicCache, start_s: float) -> ScriptedSession:
    """A 1-hour-TTL system prompt and an edit of a message in the middle of the history."""
    profile = coding_profile(rng, SONNET_45, user_id=pools.hex_id(rng, 64), system_ttl_1h=True)
    conv = new_conversation(rng, cache, profile, start_s)
    work_turn(conv, rng, steps=2)
    work_turn(conv, rng, steps=2)
    prompts = [
        i for i, m in enumerate(conv.messages) if m["role"] == "user" and isinstance(m["content"], str)
    ]
    conv.edit_message(prompts[1], "Use the streaming writer; the buffered one is gone.")
    work_turn(conv, rng, steps=2)
    return ScriptedSession(session_id=pools.uuid4(rng), conversation=conv, scenarios=["edited"])


def plain_session(
    rng: random.Random, cache: AnthropicCache, start_s: float, *, model: str = SONNET, turns: int = 2
) -> ScriptedSession:
    """An ordinary session whose cache grows turn by turn."""
    conv = new_conversation(rng, cache, coding_profile(rng, model, user_id=pools.hex_id(rng, 64)), start_s)
    for _ in range(turns):
        work_turn(conv, rng, steps=rng.randint(1, 3))
    return ScriptedSession(session_id=pools.uuid4(rng), conversation=conv)


def subagent_session(rng: random.Random, cache: AnthropicCache, start_s: float) -> ScriptedSession:
    """Opus with a 1-hour system TTL that launches a Sonnet subagent through a Task call."""
    conv = new_conversation(
        rng, cache, coding_profile(rng, OPUS_46, user_id=pools.hex_id(rng, 64), system_ttl_1h=True), start_s
    )
    work_turn(conv, rng, steps=1)
    conv.prompt("Explore the ingest package and tell me where batches are flushed.")
    conv.respond(
        "I'll delegate the exploration.",
        [("Task", {"description": "Explore ingest", "prompt": "Find where batches are flushed."})],
    )
    task_id = conv.last_tool_use_ids()[0]
    agent = new_conversation(
        rng, cache, coding_profile(rng, SONNET_45, user_id=conv.profile.user_id), conv.now_s
    )
    agent.lineage = "subagent"
    agent.prompt("Find where batches are flushed in the ingest package. Report file and line.")
    for _ in range(3):
        tool_step(agent, rng)
    report = agent.respond("Batches are flushed in src/ingest/batches.py, in BatchWriter.close().")
    conv.now_s = agent.now_s
    conv.tool_results([(task_id, report.content[0]["text"])])
    conv.respond(pools.paragraph(rng, 2))
    work_turn(conv, rng, steps=1)
    sub = Subagent(agent_id=pools.hex_id(rng, 7), conversation=agent)
    return ScriptedSession(
        session_id=pools.uuid4(rng), conversation=conv, subagents=[sub], scenarios=["subagent"]
    )


def compaction_session(rng: random.Random, cache: AnthropicCache, start_s: float) -> ScriptedSession:
    """A long session compacted automatically; the summarising call runs as its own subagent."""
    conv = new_conversation(rng, cache, coding_profile(rng, OPUS_46, user_id=pools.hex_id(rng, 64)), start_s)
    for _ in range(3):
        work_turn(conv, rng, steps=3)
    summarizer = new_conversation(rng, cache, conv.profile, conv.now_s)
    summarizer.lineage = "subagent"
    summarizer.messages = [dict(m) for m in conv.messages]
    summarizer.prompt("Summarise the conversation so far: goals, files, decisions and open questions.")
    summary = summarizer.respond("Summary: " + pools.paragraph(rng, 8))
    conv.now_s = summarizer.now_s
    conv.compact(
        "This session is being continued from a previous conversation that ran out of context. "
        + summary.content[0]["text"]
    )
    conv.respond(pools.paragraph(rng, 1), [("Read", {"path": "src/ingest/reader.py"})])
    conv.tool_results([(conv.last_tool_use_ids()[0], pools.numbered_file(rng, "src/ingest/reader.py", 20))])
    conv.respond(pools.paragraph(rng, 2))
    sub = Subagent(agent_id="acompact-" + pools.hex_id(rng, 6), conversation=summarizer)
    return ScriptedSession(
        session_id=pools.uuid4(rng), conversation=conv, subagents=[sub], scenarios=["compacted"]
    )
