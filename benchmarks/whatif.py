"""What-if of a generated 2,000-request Claude session: in the engine, and ``manage.py whatif`` whole.

    python benchmarks/whatif.py [--requests 2000] [--compact-every 150] [--runs 3] [--keep PATH]

Generates one coding-agent session as an anthropic-capture log: 20 tools, a 6,000-token system
prompt whose clock line changes every minute, a marker on the system prompt and on the last
message, a tool call and its result appended per request (about 20 s apart, an 8-minute pause every
50 requests and a 70-minute one every 500), a compaction every ``--compact-every`` requests; the
usage of each request is billed by :class:`dashboard.demo.cache_model.AnthropicCache`, the
generator's own model of the provider. Prints:

- the log: requests, units, MB of JSON;
- in-engine timings, wall and CPU (median of ``--runs``, the collector paused as the service pauses
  it): reading the log into records, rendering every request once (each body from nothing, then
  in order through a :class:`~projections.cache.render.rendering.Renderer`, each taking the units
  it shares with an earlier request, as the replay and the analysis render them),
  :func:`~projections.cache.whatif.session.whatif_session` over every scenario from the records
  (render, lineages, and every world of ``best`` replayed in lockstep, those that follow another
  counted once),
  and the replay alone over the renderings, with lineages decided as a log file's are and as a
  stored session's analysis gives them; target under 1 s;
- the whole process: ``manage.py whatif LOG --json`` in a fresh interpreter (Django start-up, the
  price table read, the log read and replayed), wall time, once;
- each scenario's cost and saving, so the figures can be read beside the timings.

Not part of the test run.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

from benchmarks.filler_text import sentence  # noqa: E402
from dashboard.demo.cache_model import AnthropicCache  # noqa: E402
from dashboard.demo.conversation import cache_layout  # noqa: E402

MODEL = "claude-sonnet-4-5-20250929"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def tools() -> list[dict[str, Any]]:
    return [
        {"name": f"tool_{t}", "description": sentence(t, 60), "input_schema": {"type": "object"}}
        for t in range(20)
    ]


def step(i: int) -> list[dict[str, Any]]:
    """One agent step: a tool call and its result."""
    call = {
        "type": "tool_use",
        "id": f"toolu_{i:06d}",
        "name": "read_file",
        "input": {"path": f"src/m{i}.py"},
    }
    result = {"type": "tool_result", "tool_use_id": f"toolu_{i:06d}", "content": sentence(i, 90)}
    return [
        {"role": "assistant", "content": [{"type": "text", "text": sentence(i, 20)}, call]},
        {"role": "user", "content": [result]},
    ]


def body(messages: list[dict[str, Any]], moment: datetime) -> dict[str, Any]:
    system = f"Current time: {moment:%H:%M}\n" + sentence(0, 4_000)
    sent = json.loads(json.dumps(messages))
    sent[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    return {
        "model": MODEL,
        "max_tokens": 8192,
        "tools": tools(),
        "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
        "messages": sent,
    }


def session_lines(requests: int, compact_every: int) -> list[dict[str, Any]]:
    """The session as anthropic-capture records, billed by the generator's cache model."""
    cache = AnthropicCache()
    lines: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": sentence(0, 60)}]}
    ]
    at = 0.0
    for n in range(requests):
        if n and n % compact_every == 0:
            summary = {"type": "text", "text": "Summary of the work so far: " + sentence(n, 400)}
            messages = [{"role": "user", "content": [summary]}]
        elif n:
            messages += step(n)
        at += 480 if n and n % 50 == 0 else 4_200 if n and n % 500 == 0 else 20
        moment = T0 + timedelta(seconds=at)
        request = body(messages, moment)
        prefix, marks = cache_layout(request)
        usage = cache.request(prefix, marks, minimum=1_024, at_s=at)
        lines.append(
            {
                "request": request,
                "response": {
                    "id": f"msg_{n:05d}",
                    "type": "message",
                    "model": MODEL,
                    "usage": {
                        "input_tokens": usage.uncached_input,
                        "cache_creation_input_tokens": usage.cache_write,
                        "cache_read_input_tokens": usage.cache_read,
                        "cache_creation": {
                            "ephemeral_5m_input_tokens": usage.cache_write_5m,
                            "ephemeral_1h_input_tokens": usage.cache_write_1h,
                        },
                        "output_tokens": 300,
                    },
                },
                "started_at": moment.isoformat(),
                "first_token_at": (moment + timedelta(seconds=2)).isoformat(),
            }
        )
    return lines


def timed(action: Callable[[], object], runs: int) -> tuple[float, float, object]:
    """Median wall and CPU seconds of ``runs`` runs, with the collector paused as the service
    pauses it, and the last run's result."""
    walls, cpus, result = [], [], None
    for _ in range(runs):
        gc.collect()
        gc.disable()
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            result = action()
        finally:
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
            gc.enable()
    return statistics.median(walls), statistics.median(cpus), result


def line(label: str, wall: float, cpu: float, note: str = "") -> None:
    print(f"  {label:40} {wall * 1000:8.0f} ms wall {cpu * 1000:8.0f} ms CPU  {note}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=2_000)
    parser.add_argument("--compact-every", type=int, default=150)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="write the log here and keep it (reused when it exists)")
    args = parser.parse_args()

    import django

    data = tempfile.mkdtemp(prefix="whatif-bench-")
    os.environ["CACHESCOPE_DATA_DIR"] = data
    os.environ.pop("DATABASE_URL", None)
    django.setup()
    from django.core.management import call_command

    from dashboard.costs.pricing import prices_load
    from dashboard.savings.inputs import file_inputs
    from projections.cache.render.rendering import Renderer, render_request
    from projections.cache.session_analysis import analyse_records
    from projections.cache.whatif.replay import CarriedBodies
    from projections.cache.whatif.session import whatif_session

    call_command("migrate", verbosity=0)
    prices = prices_load()

    # Not session.jsonl: a file of that name is read as a dsh log.
    log = args.keep or Path(data) / "capture.jsonl"
    if not log.exists():
        lines = session_lines(args.requests, args.compact_every)
        log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    print(f"log: {log.stat().st_size / 1e6:.1f} MB of JSON, {log}")

    wall, cpu, read = timed(lambda: file_inputs(log), 1)
    (inputs,) = read  # type: ignore[misc]
    records = inputs.records
    units = sum(len(r.body["messages"]) for r in records if r.body)  # type: ignore[index]
    print(f"     {len(records):,} requests, {units:,} messages in all")
    print(f"in the engine (median of {args.runs} runs):")
    line("read the log into records (once)", wall, cpu)
    wall, cpu, _ = timed(
        lambda: [render_request(r.provider, r.api, r.body, usage=r.usage) for r in records if r.body],
        args.runs,
    )
    line("render every request alone", wall, cpu, "(each from nothing)")

    def in_order() -> dict[str, Any]:
        renderer = Renderer()
        return {r.key: renderer.render(r.provider, r.api, r.body, usage=r.usage) for r in records if r.body}

    wall, cpu, rendered = timed(in_order, args.runs)
    line("render them in order", wall, cpu, "(shared messages taken, as the analysis does)")
    renderings: dict[str, Any] = rendered  # type: ignore[assignment]

    class Rendered(CarriedBodies):
        """The bodies rendered already, so the replay is timed alone."""

        def rebuild(self, record: Any) -> Any:
            return record, renderings[record.key]

    results = analyse_records(records, renderings=renderings).results
    parents = {r.key: (r.data.get("previous") or {}).get("key") for r in results}
    wall, cpu, whatif = timed(lambda: whatif_session(records, prices=prices), args.runs)
    worlds = whatif.worlds  # type: ignore[union-attr]
    line("whatif_session of the log's records", wall, cpu, f"(render, lineages and {worlds} worlds)")
    wall, cpu, _ = timed(lambda: whatif_session(records, prices=prices, bodies=Rendered()), args.runs)
    line("  the replay alone, lineages decided", wall, cpu, "target < 1 s")
    wall, cpu, stored = timed(
        lambda: whatif_session(records, prices=prices, bodies=Rendered(), parents=parents), args.runs
    )
    line("  the replay alone, lineages as analysed", wall, cpu, "(a stored session's); target < 1 s")

    env = {**os.environ, "CACHESCOPE_DATA_DIR": data}
    start = time.perf_counter()
    done = subprocess.run(  # the interpreter running this script, on this repository's manage.py
        [sys.executable, str(ROOT / "manage.py"), "whatif", str(log), "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    print(f"whole process: manage.py whatif LOG --json   {(time.perf_counter() - start) * 1000:8.0f} ms wall")
    rows = json.loads(done.stdout)
    print("scenarios:")
    for row in rows:
        cost = "—" if row["cost_usd"] is None else f"${row['cost_usd']:.2f}"
        saving = "—" if row["saving_usd"] is None else f"${row['saving_usd']:.2f}"
        extra = " + ".join(row.get("combination") or [])
        print(f"  {row['scenario']:22} {cost:>9} saves {saving:>8}  {extra}")
    assert rows == json.loads(json.dumps(whatif.to_json()))  # type: ignore[union-attr]
    assert stored.to_json() == whatif.to_json()  # type: ignore[union-attr]


if __name__ == "__main__":
    main()
