"""Grouping recorded calls into sessions, one per conversation.

An agent resends its whole conversation on every call, so a call whose messages start with another
call's messages continues that call's conversation. Each message is hashed without its
``cache_control`` markers (clients move the marker to the newest message on every call), the hashes
are chained, and a new call joins the session whose latest call's chain is the longest prefix of
its own. Only each session's latest call is indexed: a fresh conversation that happens to open with
the same first message as an old one does not join it once the old one has moved on.

The index lives in memory, in one place at a time: the proxy's event loop when it must know a
call's session before forwarding it (``--diagnose`` needs the previous answer's id), else the
recorder's thread, off the request path. A restarted proxy starts new sessions.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import orjson

_FIRST_ID = re.compile(r'"id"\s*:\s*"([^"]{1,200})"')
MAX_SESSIONS = 10_000
"""Sessions remembered at once; the least recently used are forgotten first."""


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a call belongs: its session and the id of that session's previous response."""

    session_id: str
    previous_message_id: str | None


@dataclass(slots=True)
class _Conversation:
    chain: bytes
    last_response_id: str | None = None


def api_of(path: str) -> str | None:
    """``messages``, ``chat`` or ``responses`` for a model call's path; ``None`` for anything else."""
    path = path.rstrip("/")
    if path.endswith("/v1/messages"):
        return "messages"
    if path.endswith("/chat/completions"):
        return "chat"
    if path.endswith("/responses"):
        return "responses"
    return None


def record_response_id(record: Mapping[str, Any]) -> str:
    """The id of a recorded call's answer: its body's ``id``, or a stream's first ``"id"``."""
    response = record.get("response")
    if not isinstance(response, Mapping):
        return ""
    body = response.get("body")
    if isinstance(body, Mapping):
        return str(body.get("id") or "")
    raw = response.get("body_raw")
    found = _FIRST_ID.search(raw) if isinstance(raw, str) else None
    return found.group(1) if found else ""


def conversation_messages(api: str, body: Mapping[str, Any]) -> list[Any] | None:
    """The messages a call resends: ``messages`` (Messages, Chat) or ``input`` (Responses)."""
    messages = body.get("input") if api == "responses" else body.get("messages")
    if isinstance(messages, str):
        return [messages]
    return messages if isinstance(messages, list) else None


def _without_markers(message: Any) -> Any:
    """A message without the ``cache_control`` of its content blocks, where markers sit."""
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        return message
    blocks = message["content"]
    if not any(isinstance(block, dict) and "cache_control" in block for block in blocks):
        return message
    bare = [
        {key: value for key, value in block.items() if key != "cache_control"}
        if isinstance(block, dict)
        else block
        for block in blocks
    ]
    return {**message, "content": bare}


def message_chain(messages: list[Any]) -> list[bytes]:
    """``chain[k]`` identifies the first ``k + 1`` messages, markers aside.

    A client serializes its messages the same way every call, so their key order is kept as sent
    rather than paid for sorting.
    """
    chain: list[bytes] = []
    digest = b""
    for message in messages:
        canonical = orjson.dumps(_without_markers(message))
        digest = hashlib.blake2b(digest + canonical, digest_size=16).digest()
        chain.append(digest)
    return chain


class Conversations:
    """The sessions the proxy has seen, by their latest call's messages."""

    def __init__(self, *, max_sessions: int = MAX_SESSIONS) -> None:
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[str, _Conversation] = OrderedDict()
        self._by_chain: dict[bytes, str] = {}
        self._by_response: dict[str, str] = {}

    def place(
        self, messages: list[Any] | None, *, session_id: str | None = None, previous_response_id: str = ""
    ) -> Placement:
        """The session of a call with ``messages``, started anew when it continues none.

        ``session_id`` (the client's own header) wins; an OpenAI ``previous_response_id`` the proxy
        has seen names its session next; then the longest matching prefix of messages.
        """
        chain = message_chain(messages or [])
        found = session_id or self._by_response.get(previous_response_id) or self._longest_prefix(chain)
        if found is None:
            found = f"rec-{uuid.uuid4().hex[:16]}"
        conversation = self._sessions.get(found)
        previous = conversation.last_response_id if conversation else None
        self._remember(found, chain[-1] if chain else b"", conversation)
        return Placement(session_id=found, previous_message_id=previous)

    def place_body(self, api: str, body: Mapping[str, Any] | None, session_header: str = "") -> Placement:
        """:meth:`place` for a call's decoded JSON body (``None`` when it had none)."""
        previous = body.get("previous_response_id") if body else None
        return self.place(
            conversation_messages(api, body) if body else None,
            session_id=session_header or None,
            previous_response_id=previous if isinstance(previous, str) else "",
        )

    def resume(self, session_id: str, record: Mapping[str, Any]) -> None:
        """Take up a session from its last recorded call (a claude-trace record), as if just seen."""
        request = record.get("request")
        body = request.get("body") if isinstance(request, Mapping) else None
        url = request.get("url") if isinstance(request, Mapping) else None
        api = api_of(urlsplit(url).path) if isinstance(url, str) else None
        if api is None or not isinstance(body, Mapping):
            return
        self.place_body(api, body, session_id)
        self.answered(session_id, record_response_id(record))

    def answered(self, session_id: str, response_id: str) -> None:
        """Note the id of the latest response in ``session_id``, the next call's previous message."""
        conversation = self._sessions.get(session_id)
        if conversation is None or not response_id:
            return
        if conversation.last_response_id:
            self._by_response.pop(conversation.last_response_id, None)
        conversation.last_response_id = response_id
        self._by_response[response_id] = session_id

    def _longest_prefix(self, chain: list[bytes]) -> str | None:
        for digest in reversed(chain):
            found = self._by_chain.get(digest)
            if found is not None:
                return found
        return None

    def _remember(self, session_id: str, chain: bytes, conversation: _Conversation | None) -> None:
        if conversation is None:
            conversation = self._sessions[session_id] = _Conversation(chain=b"")
        elif self._by_chain.get(conversation.chain) == session_id:
            del self._by_chain[conversation.chain]
        self._sessions.move_to_end(session_id)
        if chain:
            conversation.chain = chain
            self._by_chain[chain] = session_id
        while len(self._sessions) > self.max_sessions:
            self._forget(*self._sessions.popitem(last=False))

    def _forget(self, session_id: str, conversation: _Conversation) -> None:
        if self._by_chain.get(conversation.chain) == session_id:
            del self._by_chain[conversation.chain]
        if conversation.last_response_id:
            self._by_response.pop(conversation.last_response_id, None)
