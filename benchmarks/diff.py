"""The diff of two consecutive 6,000-message requests, beside a full-text comparison, and render speed.

    python benchmarks/diff.py [--messages 6000] [--runs 50] [--requests PATH]

Builds a conversation of ``--messages`` messages (about 2 MB of request JSON) with tools, a marked
system prompt and a moving marker on the last message, and the next request of the same lineage
(one more turn appended). Prints:

- the median time of the engine's diff (shared prefix from the prefix-hash lists, first change,
  marker states, wire-allows and cacheability) of the two rendered requests (target: under 5 ms);
- the median time of a baseline that serializes both bodies as stable JSON and looks for the first
  differing character;
- render throughput (request JSON → hashed units with calibrated tokens) in MB/s of request JSON
  (target: at least 200 MB/s), with the C hash and with the plain-Python one, beside BLAKE2b
  alone (hashlib) over the units' canonical bytes;
- with ``--requests PATH`` (any log with request bodies, e.g. a claude-trace log), the same render
  throughput over every request of that file.

Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.filler_text import sentence  # noqa: E402
from projections.cache.render import accel  # noqa: E402
from projections.cache.render.canonical import digest  # noqa: E402
from projections.cache.render.diff import diff_requests  # noqa: E402
from projections.cache.render.rendering import render_request  # noqa: E402
from projections.formats import read_sessions  # noqa: E402
from projections.normalized import RequestRecord, Usage  # noqa: E402

MODEL = "claude-sonnet-4-20250514"


def message(i: int) -> dict[str, Any]:
    """Alternating user text, assistant tool calls and tool results of a few hundred bytes each."""
    if i % 4 == 0:
        return {"role": "user", "content": [{"type": "text", "text": sentence(i, 48)}]}
    if i % 4 == 1:
        call = {
            "type": "tool_use",
            "id": f"toolu_{i:06d}",
            "name": "read_file",
            "input": {"path": f"src/m{i}.py"},
        }
        return {"role": "assistant", "content": [{"type": "text", "text": sentence(i, 12)}, call]}
    if i % 4 == 2:
        result = {"type": "tool_result", "tool_use_id": f"toolu_{i - 1:06d}", "content": sentence(i, 72)}
        return {"role": "user", "content": [result]}
    return {"role": "assistant", "content": [{"type": "text", "text": sentence(i, 30)}]}


def request_body(count: int) -> dict[str, Any]:
    messages = [message(i) for i in range(count)]
    last = messages[-1]["content"][-1]
    messages[-1]["content"][-1] = {**last, "cache_control": {"type": "ephemeral"}}
    tools = [
        {"name": f"tool_{t}", "description": sentence(t, 50), "input_schema": {"type": "object"}}
        for t in range(20)
    ]
    system = [{"type": "text", "text": sentence(0, 800), "cache_control": {"type": "ephemeral"}}]
    return {"model": MODEL, "max_tokens": 4096, "tools": tools, "system": system, "messages": messages}


def median_ms(action: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def first_difference(a: str, b: str) -> int:
    """Offset of the first differing character, by halving (the fastest pure-Python way)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=6000)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--requests", type=Path, help="also render every request body of this log")
    args = parser.parse_args()

    prev_body = request_body(args.messages)
    cur_body = request_body(args.messages + 2)
    edited_body = json.loads(json.dumps(cur_body))
    edited_body["messages"][args.messages // 2]["content"][0]["text"] += " (edited)"
    size = len(json.dumps(cur_body).encode("utf-8"))
    usage = Usage(20, 0, 500_000, None, 100, "anthropic")
    prev = render_request("anthropic", "messages", prev_body, usage=usage)
    cur = render_request("anthropic", "messages", cur_body, usage=usage)
    edited = render_request("anthropic", "messages", edited_body, usage=usage)
    print(f"requests: {args.messages:,} and {args.messages + 2:,} messages")
    print(f"          {size / 1e6:.2f} MB of JSON, {len(cur):,} units")

    for name, nxt, body in (("appended", cur, cur_body), ("edited mid-history", edited, edited_body)):
        diff = diff_requests(prev, nxt, minimum=1024, lookback=20)
        states = ", ".join(m.status for m in diff.markers)
        where = "none" if diff.first_change is None else diff.first_change.identity
        print(f"\n{name}: {diff.shared_units:,} units shared, first change {where}, markers {states}")
        engine = median_ms(partial(diff_requests, prev, nxt, minimum=1024, lookback=20), args.runs)
        compare = median_ms(partial(first_difference, stable_json(prev_body), stable_json(body)), args.runs)
        serialize = median_ms(partial(serialize_and_compare, prev_body, body), 5)
        print(f"  engine diff (prefix hashes):        median {engine:8.3f} ms   (target < 5 ms)")
        print(f"  baseline, compare two JSON texts:   median {compare:8.3f} ms")
        print(f"  baseline, serialize and compare:    median {serialize:8.3f} ms")

    runs = max(10, args.runs // 2)
    print()
    request = partial(render_request, "anthropic", "messages", cur_body, usage=usage)
    for name, rate, each in render_rates(request, size, runs):
        rendering = f"{rate:8.1f} MB/s  ({each:.1f} ms a request; target 200 MB/s)"
        print(f"render + hash + calibrate, {name + ':':18} {rendering}")
    parts = cur.canonicals
    volume = sum(len(c) for c in parts)

    def hash_all() -> None:
        for data in parts:
            digest(data)

    hashing = median_ms(hash_all, runs)
    rate = volume / 1e6 / (hashing / 1000)
    print(f"BLAKE2b alone over the units (hashlib): {rate:8.1f} MB/s  ({hashing:.1f} ms)")
    if args.requests:
        records = [r for r in requests_of(args.requests) if r.body is not None]
        volume = sum(len(json.dumps(r.body).encode("utf-8")) for r in records)
        print(f"\n{args.requests}: {len(records):,} requests, {volume / 1e6:.2f} MB of JSON")

        def render_all() -> None:
            for r in records:
                assert r.body is not None
                render_request(r.provider, r.api, r.body, usage=r.usage)

        for name, rate, each in render_rates(render_all, volume, runs):
            print(
                f"render + hash + calibrate, {name + ':':18} {rate:8.1f} MB/s  ({each:.1f} ms for them all)"
            )


def render_rates(action: Callable[[], object], volume: int, runs: int) -> list[tuple[str, float, float]]:
    """(name, MB/s, median ms) of ``action`` with the C hash, when built, and with plain Python."""
    native = accel.native
    rates = []
    for name, module in (("C hash", native), ("plain Python", None)):
        if name == "C hash" and module is None:
            print("render + hash + calibrate, C hash: not built (no C compiler at install)")
            continue
        accel.native = module
        try:
            each = median_ms(action, runs)
        finally:
            accel.native = native
        rates.append((name, volume / 1e6 / (each / 1000), each))
    return rates


def requests_of(path: Path) -> list[RequestRecord]:
    return [item for s in read_sessions(path) for item in s.items if isinstance(item, RequestRecord)]


def serialize_and_compare(a: dict[str, Any], b: dict[str, Any]) -> int:
    return first_difference(stable_json(a), stable_json(b))


def stable_json(body: dict[str, Any]) -> str:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


if __name__ == "__main__":
    main()
