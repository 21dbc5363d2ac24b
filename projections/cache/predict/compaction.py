"""Compaction seen in raw traffic: the summarising call, and the restart that follows it.

Claude Code compacts a conversation in two requests (shapes from claude-trace captures of 1.0.x
and the 2.1.39 transcript in the project's real data):

- the **summarising call** sends the whole history with a last user message asking to "create a
  detailed summary of the conversation so far". Older releases send it with a system prompt of its
  own ("You are a helpful AI assistant tasked with summarizing conversations.") and one tool, so
  it shares no prefix with the main thread's cache and writes the history again; 2.1.39 sends it
  as the ``agent-acompact-*`` subagent with the main thread's system prompt and tools, and it read
  the 164,830 tokens the main thread had cached (its only call: read 164,830, wrote 8,681);
- the **restart** replaces the history by the summary, its first user message opening with "This
  session is being continued from a previous conversation…": only the tools and system prompt can
  be read, and the summary is written.

The analysis gives the summarising call the lineage ``compaction`` and the restart the label
``compacted``, and states what each cost (:class:`CompactionNote`).
"""

from __future__ import annotations

from dataclasses import dataclass

from projections.cache.render.rendered_request import RenderedRequest
from projections.normalized import JSON, RequestRecord, Usage

SUMMARIZER_SYSTEM = "You are a helpful AI assistant tasked with summarizing conversations."
SUMMARY_REQUEST = "detailed summary of the conversation so far"
CONTINUATION = "This session is being continued from a previous conversation"

COMPACTION_LINEAGE = "compaction"
COMPACTED = "compacted"
"""The label of the request after a compaction."""
COMPACTION_REWRITE = "compaction-rewrite"
"""The label of a summarising call that wrote what the main thread had cached instead of reading it."""


def _text(raw: JSON) -> str:
    if isinstance(raw, str):
        return raw
    if isinstance(raw, dict):
        text = raw.get("text")
        if isinstance(text, str):
            return text
        content = raw.get("content")
        if isinstance(content, (str, list)):
            return _text(content)
    if isinstance(raw, list):
        return "\n".join(_text(part) for part in raw)
    return ""


def is_compaction_call(rendered: RenderedRequest) -> bool:
    """Whether a request is a summarising call: the summarizer's system prompt, or a last user
    message asking for the detailed summary of the conversation so far."""
    start, end = rendered.tier_start("system"), rendered.tier_start("messages")
    if any(_summarizer_block(rendered.block_hashes[i], rendered.raws[i]) for i in range(start, end)):
        return True
    last = rendered.message_indexes[-1] if end < len(rendered) else None
    if last is None:
        return False
    # The last message's units end the request: walked back from the end, not found among all.
    first = len(rendered) - 1
    while first > end and rendered.message_indexes[first - 1] == last:
        first -= 1
    tail = range(first, len(rendered))
    return all(rendered.roles[i] == "user" for i in tail) and any(
        SUMMARY_REQUEST in _text(rendered.raws[i]) for i in tail
    )


_SUMMARIZER_BLOCKS: dict[str, bool] = {}
"""Whether each system block seen (by block hash) holds the summarizer's prompt: a session's
requests send the same few system blocks, tens of kilobytes each, thousands of times."""


def _summarizer_block(block_hash: str, raw: JSON) -> bool:
    found = _SUMMARIZER_BLOCKS.get(block_hash)
    if found is None:
        if len(_SUMMARIZER_BLOCKS) >= 4_096:
            _SUMMARIZER_BLOCKS.clear()
        found = _SUMMARIZER_BLOCKS[block_hash] = SUMMARIZER_SYSTEM in _text(raw)
    return found


def is_compaction_restart(rendered: RenderedRequest) -> bool:
    """Whether a request opens with a compaction summary (its first message says the session is
    continued from a previous conversation)."""
    for i in range(rendered.tier_start("messages"), len(rendered)):
        if rendered.message_indexes[i] != 0:
            break
        if _text(rendered.raws[i]).lstrip().startswith(CONTINUATION):
            return True
    return False


def head_change_detail(prev: RenderedRequest, cur: RenderedRequest) -> str:
    """Why a summarising call whose tools and system prompt differ from the main thread's cannot
    read the main thread's cache: what each sends ahead of the history."""
    tools_before, tools_now = prev.tier_start("system"), cur.tier_start("system")
    system = " ".join(_text(cur.raws[i]) for i in range(tools_now, cur.tier_start("messages")))
    shown = system if len(system) <= 60 else system[:59] + "…"
    return (
        f"the compaction call sends {tools_now} tool(s) and the system prompt {shown!r} where the "
        f"main thread sends {tools_before} tool(s) and its own, so it cannot read the main thread's "
        "cached history"
    )


def head_hashes(rendered: RenderedRequest) -> list[str]:
    """The block hashes of the tools and system prompt: what a call must share to read a cache."""
    return rendered.block_hashes[: rendered.tier_start("messages")]


@dataclass(frozen=True, slots=True)
class CompactionNote:
    """What one request of a compaction cost, and why.

    ``role`` is ``call`` (the summarising call) or ``restart``. ``cached_before`` is what the main
    thread had cached when the request was sent (its previous call's read plus write), ``None`` when
    unknown. For a call, ``reprocessed`` is what of that it did not read, and ``rewritten`` the part
    of those it wrote to the cache again: what reading the main thread's cache would have saved.
    """

    role: str
    read: int
    written: int
    uncached: int
    cached_before: int | None
    shares_head: bool | None
    """For a call with a body, whether its tools and system prompt are the main thread's."""
    writer: str = ""
    """Which request left ``cached_before``: ``request #5`` or ``request #60 of another session``."""
    reported: bool = True
    """Whether the provider reported the request's cache read; without it nothing is said of reads."""

    @property
    def prompt(self) -> int:
        """Every prompt token the request sent."""
        return self.read + self.written + self.uncached

    @property
    def reprocessed(self) -> int:
        """Of what the main thread had cached (at most the prompt), the tokens not read."""
        if self.role != "call" or self.cached_before is None or not self.reported:
            return 0
        return max(0, min(self.cached_before, self.prompt) - self.read)

    @property
    def rewritten(self) -> int:
        """Of those, the ones written to the cache again."""
        return min(self.reprocessed, self.written)

    def detail(self) -> str:
        """One sentence: what the request did and what it cost in tokens."""
        if not self.reported:
            what = (
                "The conversation was compacted: this request starts from the summary"
                if self.role == "restart"
                else f"The compaction call re-sent the conversation ({self.prompt:,} tokens) to summarise it"
            )
            return f"{what}; the provider reported no cache read, so what it read of the cache is unknown."
        if self.role == "restart":
            dropped = ""
            if self.cached_before is not None:
                dropped = (
                    f" the {self.cached_before:,}-token history the previous request had cached was "
                    "replaced by its summary;"
                )
            return (
                f"The conversation was compacted:{dropped} this request read {self.read:,} tokens "
                f"(the tools and system prompt) and wrote {self.written:,} (the summary and what "
                "follows it). That write is what compacting costs, not a fault of the request."
            )
        before = (
            "" if self.cached_before is None else f" ({self.writer} had left {self.cached_before:,} cached)"
        )
        if not self.reprocessed:
            return (
                f"The compaction call re-sent the conversation ({self.prompt:,} tokens) and read "
                f"{self.read:,} tokens from the cache{before}, writing {self.written:,}: its prompt "
                "begins as the main thread's (system prompt, tools, history), so it reads the main "
                "thread's cached history."
            )
        why = (
            "its system prompt and tools differ from the main thread's, so it cannot read the main "
            "thread's cached history"
            if self.shares_head is False
            else "a transcript does not show why (a call that keeps the main thread's system prompt and "
            "tools reads it)"
        )
        context = min(self.cached_before or 0, self.prompt)
        return (
            f"The compaction call re-sent the main thread's ~{context:,}-token context and read only "
            f"{self.read:,} tokens from the cache{before}: {why}. It wrote {self.written:,} tokens "
            f"instead; reading the main thread's cache would have read {self.reprocessed:,} more "
            f"tokens at the read price, {self.rewritten:,} of them written here at the write price."
        )

    def to_json(self) -> dict[str, JSON]:
        """The note as the pages read and price it."""
        return {
            "role": self.role,
            "read": self.read,
            "written": self.written,
            "uncached": self.uncached,
            "cached_before": self.cached_before,
            "shares_head": self.shares_head,
            "writer": self.writer,
            "reprocessed": self.reprocessed,
            "rewritten": self.rewritten,
            "reported": self.reported,
        }


def compaction_note(
    role: str,
    usage: Usage | None,
    cached_before: int | None,
    *,
    shares_head: bool | None = None,
    writer: str = "",
) -> CompactionNote | None:
    """The note of a compaction request from its usage; ``None`` when it reported no usage."""
    if usage is None or usage.prompt_total is None:
        return None
    return CompactionNote(
        role,
        usage.cache_read or 0,
        usage.cache_write or 0,
        usage.uncached_input or 0,
        cached_before,
        shares_head,
        writer,
        usage.cache_read is not None,
    )


def cached_after(usage: Usage | None) -> int | None:
    """What a call left cached: its read plus its writes (``None`` when it reported neither)."""
    if usage is None or (usage.cache_read is None and usage.cache_write is None):
        return None
    return (usage.cache_read or 0) + (usage.cache_write or 0)


def body_compaction_note(
    request: RequestRecord,
    rendered: RenderedRequest,
    prev: RenderedRequest | None,
    parent: RequestRecord | None,
) -> CompactionNote | None:
    """The note of a summarising call or of the restart after it, from its body, the request it is
    compared with (``prev``, rendered) and that request's record; ``None`` for any other request."""
    if request.lineage == COMPACTION_LINEAGE or is_compaction_call(rendered):
        role = "call"
    elif is_compaction_restart(rendered) and (prev is None or not is_compaction_restart(prev)):
        role = "restart"
    else:
        return None
    shares = None if prev is None else head_hashes(prev) == head_hashes(rendered)
    writer = "" if parent is None else f"request #{parent.ordinal + 1}"
    cached = cached_after(parent.usage) if parent is not None else None
    return compaction_note(role, request.usage, cached, shares_head=shares, writer=writer)
