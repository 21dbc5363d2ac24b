"""An Anthropic Messages conversation as a coding agent sends it: full request bodies, their timing and
the usage the prompt cache bills for each.

Writers of claude-trace logs, Anthropic captures, connectome-host call logs and Claude Code
transcripts all project the same :class:`Call` objects, so every format tells one consistent story.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from dashboard.demo import pools
from dashboard.demo.cache_model import (
    ANTHROPIC_MINIMUM,
    TTL_1H,
    AnthropicCache,
    Breakpoint,
    CacheUsage,
    PrefixPoint,
    estimate_tokens,
    prefix_chain,
)
from dashboard.demo.clock import at, iso_z
from projections.normalized import Lineage

Block = dict[str, Any]
Message = dict[str, Any]

IMAGE_PLACEHOLDER = "[Image removed from context to save tokens]"
"""The text an agent puts in place of an image it strips from history."""

IMAGE_TOKENS = 1_600
"""What one full-size screenshot costs: about (width x height) / 750 tokens (Anthropic vision docs)."""


@dataclass(slots=True)
class Call:
    """One provider call: the request as sent, its response and what it was billed."""

    lineage: Lineage
    started: datetime
    first_token: datetime
    finished: datetime
    body: dict[str, Any]
    message_id: str
    request_id: str
    content: list[Block]
    stop_reason: str
    usage: CacheUsage
    output_tokens: int
    tags: tuple[str, ...] = ()


@dataclass(slots=True)
class UserEntry:
    """A user message appended to the history (a prompt, tool results, or a compaction summary)."""

    message: Message
    at: datetime
    kind: str
    """``prompt``, ``tool-results`` or ``summary``."""


@dataclass(slots=True)
class CompactionEntry:
    """The point where the history was replaced by a summary."""

    at: datetime
    pre_tokens: int


TimelineEntry = UserEntry | Call | CompactionEntry


@dataclass(slots=True)
class AgentProfile:
    """The static part of an agent's requests: model, system blocks, tools and marker policy."""

    model: str
    system: list[str]
    tools: list[dict[str, Any]]
    system_ttl_1h: bool = False
    system_clock: bool = False
    """Append a per-request timestamp line to the last system block (a prompt that changes every turn)."""
    stream: bool = True
    max_tokens: int = 32000
    user_id: str = ""


@dataclass(slots=True)
class Conversation:
    """A conversation's state and the calls it has made so far."""

    rng: random.Random
    cache: AnthropicCache
    profile: AgentProfile
    now_s: float
    lineage: Lineage = "main"
    messages: list[Message] = field(default_factory=list)
    timeline: list[TimelineEntry] = field(default_factory=list)
    _tags: list[str] = field(default_factory=list)

    @property
    def calls(self) -> list[Call]:
        """The calls made so far, in order."""
        return [entry for entry in self.timeline if isinstance(entry, Call)]

    def wait(self, seconds: float) -> None:
        """Let ``seconds`` pass (user think time, a coffee break that outlives the cache TTL)."""
        self.now_s += seconds

    def prompt(self, content: str | list[Block]) -> None:
        """Append a user prompt."""
        self._append_user(content, "prompt")

    def tool_results(self, results: list[tuple[str, str]]) -> None:
        """Append one user message with a tool_result block per (tool_use_id, output)."""
        blocks: list[Block] = [
            {"tool_use_id": tool_id, "type": "tool_result", "content": output} for tool_id, output in results
        ]
        self._append_user(blocks, "tool-results")

    def respond(self, text: str | None, tool_uses: Sequence[tuple[str, dict[str, Any]]] = ()) -> Call:
        """Send the request for the current history and append the assistant's reply to it."""
        content: list[Block] = []
        if text:
            content.append({"type": "text", "text": text})
        for name, arguments in tool_uses:
            content.append(
                {"type": "tool_use", "id": pools.tool_use_id(self.rng), "name": name, "input": arguments}
            )
        stop = "tool_use" if tool_uses else "end_turn"
        call = self._send(self.profile, self.messages, content, stop, self.lineage)
        self.messages.append({"role": "assistant", "content": content})
        return call

    def side_call(self, profile: AgentProfile, prompt: str, reply: str) -> Call:
        """A one-off call outside the history (a title or quota probe on a small model)."""
        messages: list[Message] = [{"role": "user", "content": prompt}]
        return self._send(profile, messages, [{"type": "text", "text": reply}], "end_turn", "side")

    def strip_image(self) -> None:
        """Replace the most recent image block of the history, in place, by a text placeholder."""
        for message in reversed(self.messages):
            content = message["content"]
            if isinstance(content, list):
                for index, block in enumerate(content):
                    if block.get("type") == "image":
                        content[index] = {"type": "text", "text": IMAGE_PLACEHOLDER}
                        self._tags.append("image-stripped")
                        return
        raise ValueError("strip_image: the history holds no image block")

    def replace_tool_result(self, tool_use_id: str, output: str) -> None:
        """Give an earlier tool_result new content under the same tool_use id."""
        for message in self.messages:
            content = message["content"]
            if isinstance(content, list):
                for block in content:
                    if block.get("type") == "tool_result" and block.get("tool_use_id") == tool_use_id:
                        block["content"] = output
                        self._tags.append("tool-result-replaced")
                        return
        raise ValueError(f"replace_tool_result: no tool_result with tool_use_id {tool_use_id}")

    def edit_message(self, index: int, text: str) -> None:
        """Rewrite the text of message ``index`` in the middle of the history."""
        message = self.messages[index]
        if isinstance(message["content"], str):
            message["content"] = text
        else:
            first_text = next(b for b in message["content"] if b.get("type") == "text")
            first_text["text"] = text
        self._tags.append("edited")

    def change_tools(self, tools: list[dict[str, Any]]) -> None:
        """Send a different tool list from the next request on."""
        self.profile.tools = tools
        self._tags.append("tools-changed")

    def change_model(self, model: str) -> None:
        """Switch the model from the next request on."""
        self.profile.model = model
        self._tags.append("model-changed")

    def compact(self, summary: str) -> None:
        """Replace the whole history by one user message carrying ``summary``."""
        last = self.calls[-1]
        self.timeline.append(CompactionEntry(at=at(self.now_s), pre_tokens=last.usage.prompt_total))
        self.messages = []
        self._append_user(summary, "summary")
        self._tags.append("compacted")

    def last_tool_use_ids(self) -> list[str]:
        """The tool_use ids of the last assistant reply."""
        content = self.messages[-1]["content"]
        return [block["id"] for block in content if block.get("type") == "tool_use"]

    def _append_user(self, content: str | list[Block], kind: str) -> None:
        message: Message = {"role": "user", "content": content}
        self.messages.append(message)
        self.timeline.append(UserEntry(message=message, at=at(self.now_s), kind=kind))
        self.now_s += 0.05

    def _send(
        self,
        profile: AgentProfile,
        messages: list[Message],
        content: list[Block],
        stop: str,
        lineage: Lineage,
    ) -> Call:
        body = render_body(profile, messages, at(self.now_s))
        prefix, marks = cache_layout(body)
        usage = self.cache.request(
            prefix, marks, minimum=ANTHROPIC_MINIMUM.get(profile.model, 1024), at_s=self.now_s
        )
        output_tokens = estimate_tokens(json.dumps(content)) + self.rng.randint(2, 30)
        started = at(self.now_s)
        latency = self.rng.uniform(0.6, 2.4)
        first_token = at(self.now_s + latency)
        self.now_s += latency + output_tokens * 0.015
        call = Call(
            lineage=lineage,
            started=started,
            first_token=first_token,
            finished=at(self.now_s),
            body=body,
            message_id=pools.message_id(self.rng),
            request_id=pools.request_id(self.rng),
            content=copy.deepcopy(content),
            stop_reason=stop,
            usage=usage,
            output_tokens=output_tokens,
            tags=tuple(self._tags) if lineage != "side" else (),
        )
        if lineage != "side":
            self._tags.clear()
        self.timeline.append(call)
        self.now_s += self.rng.uniform(0.3, 3.0)
        return call


def render_body(profile: AgentProfile, messages: list[Message], moment: datetime) -> dict[str, Any]:
    """The request body as a coding agent sends it, with its cache_control markers.

    Markers: every system block, and the last block of each of the last two messages (four at most).
    """
    marker: dict[str, Any] = {"type": "ephemeral"}
    system_marker: dict[str, Any] = {"type": "ephemeral", "ttl": "1h"} if profile.system_ttl_1h else marker
    texts = list(profile.system)
    if profile.system_clock and texts:
        texts[-1] = texts[-1] + f"\nCurrent time: {iso_z(moment)}"
    system = [{"type": "text", "text": text, "cache_control": dict(system_marker)} for text in texts]
    sent = copy.deepcopy(messages)
    for message in sent[-2:]:
        if isinstance(message["content"], str):
            message["content"] = [{"type": "text", "text": message["content"], "cache_control": dict(marker)}]
        else:
            message["content"][-1]["cache_control"] = dict(marker)
    body: dict[str, Any] = {"model": profile.model, "messages": sent}
    if system:
        body["temperature"] = 1
        body["system"] = system
    if profile.tools:
        body["tools"] = copy.deepcopy(profile.tools)
    body["metadata"] = {"user_id": profile.user_id}
    body["max_tokens"] = profile.max_tokens
    if profile.stream:
        body["stream"] = True
    return body


def cache_layout(body: dict[str, Any]) -> tuple[list[PrefixPoint], list[Breakpoint]]:
    """The prefix points and breakpoints of an Anthropic request body, in prefix order."""
    units: list[tuple[str, int]] = []
    marks: list[Breakpoint] = []

    def add(tier: str, unit: Any, key_extra: str = "") -> None:
        bare = {k: v for k, v in unit.items() if k != "cache_control"} if isinstance(unit, dict) else unit
        text = tier + json.dumps(bare, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        # ``key_extra`` joins the cache key, not the token count: parameters are not prompt text.
        # An image costs what its pixels cost, not what its base64 weighs (Anthropic vision docs).
        is_image = isinstance(unit, dict) and unit.get("type") == "image"
        units.append((key_extra + text, IMAGE_TOKENS if is_image else estimate_tokens(text)))
        control = unit.get("cache_control") if isinstance(unit, dict) else None
        if control is not None:
            marks.append(Breakpoint(len(units) - 1, TTL_1H if control.get("ttl") == "1h" else 300))

    for tool in body.get("tools", []):
        add("tool:", tool)
    system = body.get("system")
    if isinstance(system, str):
        add("system:", system)
    for block in system or []:
        if isinstance(block, dict):
            add("system:", block)
    # Anthropic keys the messages cache on tool_choice, the thinking settings and whether any image
    # is present: a change to one of them re-keys every message, while tools and system stay cached.
    images = any(
        isinstance(block, dict) and block.get("type") == "image"
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
    )
    message_key = f"{body.get('tool_choice')}|{body.get('thinking')}|images={images}|"
    for message in body["messages"]:
        content = message["content"]
        for block in [content] if isinstance(content, str) else content:
            add(message["role"] + ":", block, message_key)
            message_key = ""
    header = str(body["model"])
    return prefix_chain(header, units), marks
