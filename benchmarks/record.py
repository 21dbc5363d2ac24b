"""The recording proxy's overhead: 50 concurrent streams, direct to a fake API and through the proxy.

    python benchmarks/record.py [--streams 50] [--rounds 4] [--messages 60] [--event-delay 0.005]

The fake Anthropic API of the proxy's tests (a real server on loopback that streams the Messages
event sequence) runs in a process of its own, and so does ``manage.py record`` against a scratch
SQLite store. Each round sends ``--streams`` streamed calls at once, every one its own
conversation that the next round extends by two messages, with bodies the size an agent's are
(``--messages`` messages of about 2 KB). It prints time to first byte, p50 and p95, direct and
through the proxy and the difference; and the proxy process's CPU time (forwarding plus the
recorder storing every call) and its peak resident memory. Not part of the test run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson

ROOT = Path(__file__).resolve().parents[1]
TICK = os.sysconf("SC_CLK_TCK")


def conversation(index: int, turns: int, messages: int) -> dict[str, Any]:
    """Conversation ``index`` after ``turns`` rounds: a long shared history, then its own turns."""
    history: list[dict[str, Any]] = []
    for number in range(messages):
        role = "user" if number % 2 == 0 else "assistant"
        text = f"conversation {index} message {number}: " + "context " * 250
        history.append({"role": role, "content": [{"type": "text", "text": text}]})
    for turn in range(turns):
        history.append({"role": "user", "content": [{"type": "text", "text": f"turn {turn}"}]})
        history.append({"role": "assistant", "content": [{"type": "text", "text": "done"}]})
    # The marker moves to the newest message every call, as Claude Code's does.
    marked = {"type": "text", "text": f"turn {turns}", "cache_control": {"type": "ephemeral"}}
    history.append({"role": "user", "content": [marked]})
    return {
        "model": "claude-sonnet-4-5-20250929",
        "max_tokens": 1024,
        "stream": True,
        "system": [{"type": "text", "text": "You are a coding agent. " * 200}],
        "messages": history,
    }


async def first_byte(client: aiohttp.ClientSession, url: str, body: bytes) -> float:
    """Seconds from sending a call to its first body byte; reads the stream to its end."""
    started = time.perf_counter()
    async with client.post(url, data=body, headers={"content-type": "application/json"}) as response:
        await response.content.readany()
        elapsed = time.perf_counter() - started
        await response.read()
        if response.status != 200:
            raise RuntimeError(f"{url} answered {response.status}")
    return elapsed


async def run_rounds(
    direct: str, proxy: str, streams: int, rounds: int, messages: int
) -> dict[str, list[float]]:
    """Each round's calls, direct then through the proxy, so both meet the same load on the machine."""
    timings: dict[str, list[float]] = {direct: [], proxy: []}
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=0)) as client:
        for turn in range(rounds):
            bodies = [orjson.dumps(conversation(index, turn, messages)) for index in range(streams)]
            for base in (direct, proxy):
                calls = (first_byte(client, base + "/v1/messages", body) for body in bodies)
                timings[base] += await asyncio.gather(*calls)
    return timings


def family(pid: int) -> list[int]:
    """A process and its descendants (the recorder child and multiprocessing's resource tracker)."""
    found = [pid]
    for member in found:
        try:
            children = Path(f"/proc/{member}/task/{member}/children").read_text().split()
        except OSError:
            continue
        found += [int(child) for child in children]
    return found


def own_cpu_seconds(pid: int) -> float:
    """User and system CPU of one process, in seconds."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def cpu_seconds(pid: int) -> float:
    """User and system CPU of a process and its descendants, in seconds."""
    return sum(own_cpu_seconds(member) for member in family(pid))


def peak_rss_mb(pid: int) -> list[float]:
    """The peak resident memory of a process and of each descendant, in MB."""
    peaks: list[float] = []
    for member in family(pid):
        try:
            status = Path(f"/proc/{member}/status").read_text().splitlines()
        except OSError:
            continue
        peaks += [int(line.split()[1]) / 1024 for line in status if line.startswith("VmHWM:")]
    return peaks


def wait_for_quiet(pid: int, *, timeout: float) -> None:
    """Wait until the process stops using CPU (its recorder has stored everything)."""
    deadline = time.monotonic() + timeout
    last = cpu_seconds(pid)
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = cpu_seconds(pid)
        if now - last < 0.02:
            return
        last = now


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--streams", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--messages", type=int, default=60)
    parser.add_argument("--event-delay", type=float, default=0.005)
    args = parser.parse_args()

    data = Path(tempfile.mkdtemp(prefix="cachescope-record-bench-"))
    env = {**os.environ, "CACHESCOPE_DATA_DIR": str(data), "DATABASE_URL": "", "CELERY_BROKER_URL": ""}
    python = sys.executable
    subprocess.run([python, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    upstream = subprocess.Popen(
        [python, "-m", "tests.dashboard.recording.fake_upstream", str(args.event_delay)],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    proxy: subprocess.Popen[str] | None = None
    try:
        assert upstream.stdout is not None
        upstream_url = f"http://127.0.0.1:{upstream.stdout.readline().strip()}"
        proxy = subprocess.Popen(
            [
                python,
                "manage.py",
                "record",
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                upstream_url,
                "--source",
                "bench",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proxy.stdout is not None
        banner = proxy.stdout.readline()
        proxy_url = banner.split()[2]
        time.sleep(2.0)  # the recorder child is up and idle
        cpu_before = cpu_seconds(proxy.pid)
        proxy_cpu_before = own_cpu_seconds(proxy.pid)

        timings = asyncio.run(run_rounds(upstream_url, proxy_url, args.streams, args.rounds, args.messages))
        direct, proxied = timings[upstream_url], timings[proxy_url]
        cpu_forwarding = own_cpu_seconds(proxy.pid) - proxy_cpu_before
        wait_for_quiet(proxy.pid, timeout=300)
        cpu_total = cpu_seconds(proxy.pid) - cpu_before
        rss = peak_rss_mb(proxy.pid)
    finally:
        if proxy is not None:
            proxy.terminate()
            proxy.wait(timeout=60)
        upstream.communicate(input="", timeout=30)

    calls = len(proxied)
    body_kb = len(orjson.dumps(conversation(0, args.rounds - 1, args.messages))) / 1024
    print(f"{calls} streamed calls per side, {args.streams} at once, bodies up to {body_kb:.0f} KB")
    for label, share in (("p50", 0.50), ("p95", 0.95)):
        d, p = percentile(direct, share) * 1000, percentile(proxied, share) * 1000
        print(f"time to first byte {label}: direct {d:.1f} ms, proxy {p:.1f} ms, added {p - d:.1f} ms")
    print(
        f"CPU: proxy process {cpu_forwarding:.2f} s ({cpu_forwarding / calls * 1000:.1f} ms a call); "
        f"with the recorder storing every call {cpu_total:.2f} s ({cpu_total / calls * 1000:.1f} ms a call)"
    )
    print(
        "peak RSS: proxy {:.0f} MB, recorder and helpers {}".format(
            rss[0], ", ".join(f"{m:.0f} MB" for m in rss[1:])
        )
    )
    with sqlite3.connect(data / "cachescope.sqlite3") as store:
        (stored,) = store.execute("SELECT count(*) FROM dashboard_request").fetchone()
        (sessions,) = store.execute("SELECT count(*) FROM dashboard_session").fetchone()
    print(f"stored {stored} of {calls} calls in {sessions} sessions (scratch store {data})")


if __name__ == "__main__":
    main()
