"""A real HTTP server on 127.0.0.1 that records the webhook POSTs it receives and answers each with
the next status of its script (200 once the script runs out)."""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class WebhookReceiver:
    def __init__(self, statuses: Iterable[int] = ()) -> None:
        self.posts: list[dict[str, Any]] = []
        self.statuses: deque[int] = deque(statuses)
        self.answered: list[int] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length))
                status = receiver.statuses.popleft() if receiver.statuses else 200
                receiver.answered.append(status)
                if status < 300:
                    receiver.posts.append(body)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the tests read what was received, not the server's log

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/hook"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def unreachable_url() -> str:
    """An http URL on 127.0.0.1 where nothing listens: a port taken and let go again."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/hook"
