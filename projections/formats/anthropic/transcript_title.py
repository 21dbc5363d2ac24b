"""The title of a Claude Code session, from its transcript's own lines.

Claude Code names a session three ways: ``/rename`` writes ``{"type": "custom-title",
"customTitle": ...}`` (the last one wins), its summariser writes ``{"type": "summary", "summary":
..., "leafUuid": ...}`` for the conversation ending at that message, and its session picker
otherwise shows the first prompt. A summary whose ``leafUuid`` is a message of another file (a
resumed conversation's ancestor) names that conversation, so it comes after the first prompt.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from projections.formats.reading.titles import blocks_text, first_title, one_line, prompt_title
from projections.normalized import JSON

_NOT_TYPED = ("<local-command-", "Caveat:", "[Request interrupted")
"""How the user lines Claude Code writes itself begin: command output, its caveat, an interruption."""


@dataclass(slots=True)
class TranscriptTitle:
    """Collects the naming lines of one transcript as they are read; :attr:`title` once all are."""

    custom: str = ""
    summaries: list[tuple[str, str]] = field(default_factory=list)
    """``(summary, leafUuid)`` in file order."""
    uuids: set[str] = field(default_factory=set)
    prompt: str = ""

    def feed(self, value: dict[str, JSON]) -> None:
        """Note what one transcript line says of the session's name."""
        kind = value.get("type")
        if kind == "custom-title" and isinstance(value.get("customTitle"), str):
            self.custom = one_line(str(value["customTitle"])) or self.custom
        elif kind == "summary" and isinstance(value.get("summary"), str):
            self.summaries.append((one_line(str(value["summary"])), str(value.get("leafUuid") or "")))
        elif kind in ("user", "assistant", "system"):
            if isinstance(value.get("uuid"), str):
                self.uuids.add(str(value["uuid"]))
            if kind == "user" and not self.prompt:
                self.prompt = _typed_prompt(value)

    @property
    def named(self) -> str:
        """The name the user or the summariser gave this conversation; "" when neither did."""
        own = [text for text, leaf in self.summaries if leaf in self.uuids]
        return first_title([self.custom, own[-1] if own else ""])

    @property
    def title(self) -> str:
        """The best name the lines gave: the user's own, the summary of this conversation, the first
        prompt, any summary; "" when there is none."""
        own = [text for text, leaf in self.summaries if leaf in self.uuids]
        return first_title(
            [
                self.custom,
                own[-1] if own else "",
                self.prompt,
                self.summaries[-1][0] if self.summaries else "",
            ]
        )


def _typed_prompt(value: dict[str, JSON]) -> str:
    """The title a user line gives, if the user typed it (not a tool result, a compaction summary or
    a line Claude Code wrote for itself)."""
    if value.get("isMeta") is True or value.get("isCompactSummary") is True:
        return ""
    message = value.get("message")
    if not isinstance(message, dict):
        return ""
    text = blocks_text(message.get("content")).strip()
    if not text or text.startswith(_NOT_TYPED):
        return ""
    return prompt_title(text)
