"""A model API on loopback that answers like the real one, for the recording proxy's tests and benchmark.

It is a real HTTP server (aiohttp, on 127.0.0.1 and a port the system picks) on its own thread. A
streamed Messages call gets the event sequence of ``fixtures/messages_stream.sse`` (the sequence an
Anthropic stream has: message_start, a text block with a ping and deltas, message_delta,
message_stop), one event per write, with a fresh message id. A call can be held before its last
event until the test releases it, which is how a test proves the proxy streams rather than buffers.
Every request is kept as received, bytes and headers, for the tests to compare.
"""

from __future__ import annotations

import asyncio
import gzip
import itertools
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

FIXTURE = Path(__file__).parent / "fixtures" / "messages_stream.sse"
EVENTS = [block + "\n\n" for block in FIXTURE.read_text().split("\n\n") if block.strip()]


@dataclass
class Received:
    method: str
    path_qs: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None


@dataclass
class FakeUpstream:
    """The server; ``url`` once started. Set ``hold_last_event`` to make streams wait for ``release``."""

    event_delay: float = 0.0
    slow_seconds: float = 30.0
    hold_last_event: bool = False
    received: list[Received] = field(default_factory=list)
    sent: list[bytes] = field(default_factory=list)
    """Each streamed answer's bytes, as written."""
    release: threading.Event = field(default_factory=threading.Event)
    cancelled: threading.Event = field(default_factory=threading.Event)
    port: int = 0
    miss_reason: str = "system_changed"
    """What a call that names a previous message is told about its cache (Anthropic's diagnostics)."""

    def __post_init__(self) -> None:
        self._ids = itertools.count(1)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeUpstream:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)
        return self

    def stop(self) -> None:
        self.release.set()
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.received.append(Received(request.method, request.path_qs, list(request.headers.items()), body))
        number = next(self._ids)
        if request.path.startswith("/slow"):
            await asyncio.sleep(self.slow_seconds)
        try:
            payload = json.loads(body) if body else {}
        except ValueError:
            payload = {}
        headers = {"request-id": f"req_fake{number:05d}"}
        diagnostics = self._diagnostics(payload)
        if request.path.endswith("/v1/messages") and payload.get("stream"):
            return await self._stream(request, f"msg_fake{number:05d}", headers, diagnostics)
        if request.path.endswith("/chat/completions"):
            answer = _chat_answer(number, payload)
        elif request.path.endswith("/responses"):
            answer = _responses_answer(number, payload)
        else:
            answer = _message_answer(number, payload)
            if diagnostics is not None:
                answer["diagnostics"] = diagnostics
        raw = json.dumps(answer).encode()
        if "gzip" in request.headers.get("Accept-Encoding", ""):
            headers["Content-Encoding"] = "gzip"
            raw = gzip.compress(raw)
        return web.Response(body=raw, headers=headers, content_type="application/json")

    def _diagnostics(self, payload: dict) -> dict | None:
        """Anthropic's answer to a request's ``diagnostics``: nothing to compare on a first call."""
        asked = payload.get("diagnostics")
        if not isinstance(asked, dict):
            return None
        if asked.get("previous_message_id") is None:
            return {"cache_miss_reason": None}
        return {"cache_miss_reason": {"type": self.miss_reason, "cache_missed_input_tokens": 4096}}

    async def _stream(
        self, request: web.Request, message_id: str, headers: dict[str, str], diagnostics: dict | None
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={**headers, "Content-Type": "text/event-stream"})
        await response.prepare(request)
        written = b""
        try:
            for index, event in enumerate(EVENTS):
                if index == len(EVENTS) - 1 and self.hold_last_event:
                    while not self.release.is_set():
                        await asyncio.sleep(0.01)
                if index == 0 and diagnostics is not None:
                    event = event.replace('"usage":', f'"diagnostics":{json.dumps(diagnostics)},"usage":', 1)
                chunk = event.replace("MESSAGE_ID", message_id).encode()
                await response.write(chunk)
                written += chunk
                if self.event_delay:
                    await asyncio.sleep(self.event_delay)
        except (asyncio.CancelledError, ConnectionResetError):
            # The proxy closed the call: seen as a cancelled handler while the stream waits, or as a
            # failed write when the close lands while the stream is still writing.
            self.cancelled.set()
            raise
        self.sent.append(written)
        await response.write_eof()
        return response


def _message_answer(number: int, payload: dict) -> dict:
    return {
        "id": f"msg_fake{number:05d}",
        "type": "message",
        "role": "assistant",
        "model": payload.get("model", "claude-sonnet-4-5-20250929"),
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 10,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 2048,
            "output_tokens": 2,
        },
    }


def _chat_answer(number: int, payload: dict) -> dict:
    return {
        "id": f"chatcmpl-fake{number:05d}",
        "object": "chat.completion",
        "model": payload.get("model", "gpt-4.1"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": 1500,
            "completion_tokens": 2,
            "total_tokens": 1502,
            "prompt_tokens_details": {"cached_tokens": 1280},
        },
    }


def _responses_answer(number: int, payload: dict) -> dict:
    return {
        "id": f"resp_fake{number:05d}",
        "object": "response",
        "status": "completed",
        "model": payload.get("model", "gpt-4.1"),
        "output": [
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}
        ],
        "usage": {
            "input_tokens": 1500,
            "input_tokens_details": {"cached_tokens": 1024},
            "output_tokens": 2,
            "total_tokens": 1502,
        },
    }


def main() -> None:
    """Serve on its own (``python -m tests.dashboard.recording.fake_upstream [EVENT_DELAY]``): print
    the port, then serve until stdin closes."""
    import sys

    fake = FakeUpstream(event_delay=float(sys.argv[1]) if len(sys.argv) > 1 else 0.0).start()
    print(fake.port, flush=True)
    sys.stdin.read()
    fake.stop()


if __name__ == "__main__":
    main()
