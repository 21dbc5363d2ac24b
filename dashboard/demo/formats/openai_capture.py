"""OpenAI captures: Chat Completions and Responses request/response pairs with automatic caching."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from dashboard.demo import pools
from dashboard.demo.cache_model import OpenAICache, estimate_tokens, prefix_chain
from dashboard.demo.clock import at, iso_z

OpenAIApi = Literal["chat", "responses"]


@dataclass(frozen=True, slots=True)
class OpenAICall:
    """One OpenAI call with the figures the response reports."""

    record: dict[str, Any]
    prompt_tokens: int
    cached_tokens: int
    output_tokens: int


@dataclass(slots=True)
class OpenAISession:
    """A multi-turn OpenAI conversation captured by a proxy."""

    api: OpenAIApi
    model: str
    session_key: str
    calls: list[OpenAICall] = field(default_factory=list)


def openai_session(
    rng: random.Random, *, api: OpenAIApi, model: str, turns: int, start_s: float
) -> OpenAISession:
    """A conversation whose stable instructions and growing history the automatic cache reuses."""
    cache = OpenAICache()
    instructions = pools.system_prompt(rng, 40)
    tools = [pools.tool_definition(name, rng, 10) for name in ("Read", "Grep")]
    history: list[dict[str, Any]] = []
    session = OpenAISession(api=api, model=model, session_key=pools.uuid4(rng))
    now = start_s
    for turn in range(turns):
        history.append({"role": "user", "content": rng.choice(pools.TASKS)})
        units = [("tools:" + json.dumps(tools, sort_keys=True), 0), ("system:" + instructions, 0)]
        units += [(f"{m['role']}:{m['content']}", 0) for m in history]
        prefix = prefix_chain(model, [(text, estimate_tokens(text)) for text, _ in units])
        prompt = prefix[-1].tokens
        cached = cache.request(prefix, at_s=now)
        answer = pools.paragraph(rng, rng.randint(2, 5))
        output = estimate_tokens(answer) + rng.randint(1, 9)
        request = _request(api, model, instructions, tools, history, session.session_key)
        response = _response(api, model, answer, rng, int(at(now).timestamp()), prompt, cached, output)
        if api == "responses":
            # This proxy logs the HTTP envelope around the body, as many do.
            response = {"status_code": 200, "headers": {"content-type": "application/json"}, "body": response}
        record = {"request": request, "response": response, "started_at": iso_z(at(now))}
        session.calls.append(
            OpenAICall(record=record, prompt_tokens=prompt, cached_tokens=cached, output_tokens=output)
        )
        history.append({"role": "assistant", "content": answer})
        now += rng.uniform(15, 90) if turn % 4 != 3 else 900
    return session


def write_openai_captures(path: Path, session: OpenAISession) -> int:
    """Write the session's calls as JSON lines; returns the number of lines."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as out:
        for call in session.calls:
            out.write(json.dumps(call.record, separators=(",", ":"), ensure_ascii=False) + "\n")
    return len(session.calls)


def _request(
    api: OpenAIApi,
    model: str,
    instructions: str,
    tools: list[dict[str, Any]],
    history: list[dict[str, Any]],
    key: str,
) -> dict[str, Any]:
    if api == "chat":
        chat_tools = [
            {
                "type": "function",
                "function": {
                    "name": t["name"],
                    "description": t["description"],
                    "parameters": t["input_schema"],
                },
            }
            for t in tools
        ]
        messages = [{"role": "system", "content": instructions}, *[dict(m) for m in history]]
        return {"model": model, "messages": messages, "tools": chat_tools, "prompt_cache_key": key}
    input_items = [
        {
            "role": m["role"],
            "content": [
                {"type": "input_text" if m["role"] == "user" else "output_text", "text": m["content"]}
            ],
        }
        for m in history
    ]
    fn_tools = [
        {
            "type": "function",
            "name": t["name"],
            "description": t["description"],
            "parameters": t["input_schema"],
        }
        for t in tools
    ]
    return {
        "model": model,
        "instructions": instructions,
        "input": input_items,
        "tools": fn_tools,
        "prompt_cache_key": key,
        "store": False,
    }


def _response(
    api: OpenAIApi,
    model: str,
    answer: str,
    rng: random.Random,
    created: int,
    prompt: int,
    cached: int,
    output: int,
) -> dict[str, Any]:
    if api == "chat":
        return {
            "id": "chatcmpl-" + pools.base62(rng, 29),
            "object": "chat.completion",
            "created": created,
            "model": model,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": output,
                "total_tokens": prompt + output,
                "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
            },
        }
    return {
        "id": "resp_" + pools.hex_id(rng, 48),
        "object": "response",
        "created_at": created,
        "status": "completed",
        "model": model,
        "output": [
            {
                "type": "message",
                "id": "msg_" + pools.hex_id(rng, 48),
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": answer, "annotations": []}],
            }
        ],
        "usage": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": output,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + output,
        },
    }
