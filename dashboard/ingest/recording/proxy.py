"""The recording reverse proxy: forwards each call unchanged and streams the answer back as it comes.

Built on aiohttp, which is both the server and the upstream client here: one asyncio stack whose
HTTP parser is compiled, whose client streams a response chunk by chunk (``iter_any``) with its
content coding left alone, and whose server can cancel a handler when its client goes away
(``handler_cancellation``), which closes the upstream call with it. A call's bytes are copied to a
:class:`~dashboard.ingest.recording.capture.CapturedCall` as they pass and handed to the recorder when the
call ends; nothing on this path waits for storage.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import orjson
from aiohttp import ClientError, ClientResponse, ClientSession, ClientTimeout, TCPConnector, web
from multidict import CIMultiDict
from yarl import URL

from dashboard.ingest.recording.capture import CapturedCall
from dashboard.ingest.recording.conversations import Conversations, api_of
from dashboard.ingest.recording.diagnose import wants_diagnostics, with_beta, with_diagnostics
from dashboard.ingest.recording.headers import (
    SESSION_HEADER,
    client_response_headers,
    stored_headers,
    upstream_request_headers,
)

log = logging.getLogger("cachescope.record")

DEFAULT_TOKEN_HEADER = "x-cachescope-token"  # noqa: S105 (a header name, not a secret)
MAX_BODY_BYTES = 256 * 1024 * 1024
_NOT_ADDED = ("Accept", "Accept-Encoding", "User-Agent", "Content-Type")
"""Headers aiohttp adds on its own; a call that did not send them must not get them."""
_UPSTREAM_FAILED: tuple[type[BaseException], ...] = (ClientError, OSError)


class CallSink(Protocol):
    """Where finished calls go: the recorder."""

    def submit(self, call: CapturedCall) -> None: ...


@dataclass(frozen=True, slots=True)
class ProxySettings:
    """How the proxy forwards: where, with which timeouts, what it adds and who may use it."""

    upstream: str = "https://api.anthropic.com"
    diagnose: bool = False
    token: str = ""
    token_header: str = DEFAULT_TOKEN_HEADER
    connect_timeout: float = 10.0
    read_timeout: float = 600.0
    """Longest silence from upstream, before its headers or between two chunks."""


class RecordingProxy:
    """The aiohttp application: one handler for every path."""

    def __init__(self, settings: ProxySettings, sink: CallSink) -> None:
        self.settings = settings
        self.sink = sink
        self.conversations = Conversations()
        self.upstream = URL(settings.upstream.rstrip("/"))
        self._client: ClientSession | None = None
        self._own_headers = [settings.token_header] if settings.token else []

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app.cleanup_ctx.append(self._client_context)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    async def _client_context(self, _app: web.Application) -> Any:
        timeout = ClientTimeout(
            total=None, sock_connect=self.settings.connect_timeout, sock_read=self.settings.read_timeout
        )
        connector = TCPConnector(limit=0, ttl_dns_cache=300)
        async with ClientSession(connector=connector, timeout=timeout, auto_decompress=False) as client:
            self._client = client
            yield

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if not self._authorized(request):
            return _error(401, "unauthorized", f"send the recording token in {self.settings.token_header}")
        started_at = time.time()
        body = await request.read()
        headers = upstream_request_headers(request.headers.items(), drop=self._own_headers)
        api = api_of(request.path)
        call: CapturedCall | None = None
        if api is not None:
            session_header = request.headers.get(SESSION_HEADER, "")
            session_id = ""
            if self.settings.diagnose:
                # The previous answer's id must be known before forwarding, so the call is placed
                # here; otherwise the recorder places it, off the request path.
                parsed = _json_object(body)
                placement = self.conversations.place_body(api, parsed, session_header)
                session_id = placement.session_id
                if wants_diagnostics(request.method, request.path, parsed):
                    body = with_diagnostics(body, placement.previous_message_id)
                    headers = with_beta(headers)
            call = CapturedCall(
                call_id=uuid.uuid4().hex,
                session_id=session_id,
                method=request.method,
                url=str(self.upstream) + request.raw_path,
                request_headers=stored_headers(headers, drop=self._own_headers),
                request_body=body,
                started_at=started_at,
                api=api,
                session_header=session_header,
            )
        try:
            return await self._forward(request, headers, body, call)
        finally:
            if call is not None:
                self._finish(call)

    def _authorized(self, request: web.Request) -> bool:
        if not self.settings.token:
            return True
        sent = request.headers.get(self.settings.token_header, "")
        return hmac.compare_digest(sent.encode(), self.settings.token.encode())

    async def _forward(
        self,
        request: web.Request,
        headers: list[tuple[str, str]],
        body: bytes,
        call: CapturedCall | None,
    ) -> web.StreamResponse:
        assert self._client is not None, "the client session starts with the application"
        sent = {name.lower() for name, _ in headers}
        url = URL(str(self.upstream) + request.raw_path, encoded=True)
        try:
            upstream = await self._client.request(
                request.method,
                url,
                headers=CIMultiDict(headers),
                data=body or None,
                skip_auto_headers=[name for name in _NOT_ADDED if name.lower() not in sent],
                allow_redirects=False,
            )
        except TimeoutError:
            return self._failed(call, 504, "upstream_timeout", f"{self.upstream} did not answer in time")
        except _UPSTREAM_FAILED as error:
            return self._failed(call, 502, "upstream_unreachable", f"{self.upstream} unreachable: {error}")
        async with upstream:
            return await self._stream(request, upstream, call)

    async def _stream(
        self, request: web.Request, upstream: ClientResponse, call: CapturedCall | None
    ) -> web.StreamResponse:
        returned = client_response_headers(_decoded_pairs(upstream.raw_headers))
        if call is not None:
            call.status = upstream.status
            call.response_headers = stored_headers(returned)
        response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
        for name, value in returned:
            response.headers.add(name, value)
        if upstream.content_length is not None:
            response.content_length = upstream.content_length
        await response.prepare(request)
        try:
            async for chunk in upstream.content.iter_any():
                if call is not None:
                    call.add_chunk(chunk, time.time())
                await response.write(chunk)
        except TimeoutError:
            if call is not None:
                call.error = "upstream went silent mid-response"
            raise
        except _UPSTREAM_FAILED as error:
            if call is not None:
                call.error = f"upstream or client connection lost mid-response: {error}"
            raise
        await response.write_eof()
        return response

    def _failed(self, call: CapturedCall | None, status: int, kind: str, message: str) -> web.Response:
        log.warning("record: %s", message)
        response = _error(status, kind, message)
        if call is not None:
            call.status = status
            call.error = message
            call.response_headers = {"content-type": "application/json"}
            assert isinstance(response.body, bytes)
            call.chunks = [response.body]
        return response

    def _finish(self, call: CapturedCall) -> None:
        call.finished_at = time.time()
        if call.status is None and not call.error:
            call.error = "client disconnected before the answer"
        if call.session_id and call.status is not None and call.status < 400:
            self.conversations.answered(call.session_id, call.response_id())
        self.sink.submit(call)


def _error(status: int, kind: str, message: str) -> web.Response:
    body = {"type": "error", "error": {"type": kind, "message": message}, "source": "cachescope-record"}
    return web.Response(status=status, body=orjson.dumps(body), content_type="application/json")


def _json_object(body: bytes) -> dict[str, Any] | None:
    if not body:
        return None
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _decoded_pairs(raw: Iterable[tuple[bytes, bytes]]) -> list[tuple[str, str]]:
    return [(name.decode("latin-1"), value.decode("latin-1")) for name, value in raw]


class ProxyServer:
    """The proxy served on its own event loop in a background thread (the command and the tests)."""

    def __init__(self, proxy: RecordingProxy, host: str, port: int) -> None:
        self.proxy = proxy
        self.host = host
        self.port = port
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="cachescope-proxy", daemon=True)

    def start(self) -> int:
        """Start listening; return the port (the one the system chose when asked for 0)."""
        self._thread.start()
        return asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=30)

    async def _start(self) -> int:
        self._runner = web.AppRunner(self.proxy.app(), handler_cancellation=True, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        return self.port

    def stop(self) -> None:
        """Stop listening, finish open calls' bookkeeping, and end the loop's thread (once)."""
        if self._loop.is_closed():
            return
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()
