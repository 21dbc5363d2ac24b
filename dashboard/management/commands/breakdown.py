"""``manage.py breakdown PATH [--state-version N] [--json]``: the context of one log file after every
event — system prompt, tool schemas and messages — with the engine alone, without the database.

Every format the importers read gives rows: a log with request bodies (claude-trace, captures)
prices each request's own system, tools and messages; a dsh log folds ``contextBreakdown``; a
usage-only transcript (Claude Code) gives its messages and the rest of the provider's prompt as
``inferredSystemToolsTokens``, with ``systemTokens`` and ``toolsTokens`` null because it cannot
tell them apart.

With ``--json`` every event prints one line ``{"seq", "type", "systemTokens", "toolsTokens",
"messageTokens", "basis"}`` plus ``providerPromptTokens`` and ``contextWindow`` where known, and,
where a request body's bands were calibrated to the provider's count, ``calibration`` and the raw
estimate as ``rawEstimate``; a fold that stops prints a last line ``{"error": ...}`` and the command
exits non-zero.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from projections.context_series import (
    ContextRow,
    RequestFigures,
    answering_seq,
    context_rows,
    request_figures,
)
from projections.folds.registry import FoldError, UnknownProjection, fold_views, get_projection
from projections.formats import read_sessions
from projections.normalized import EventRecord, FormatError, LineError, RequestRecord, SessionImport
from projections.prices import PriceError
from projections.providers.model_windows import host_of_format

KEY = "contextBreakdown"


class Command(BaseCommand):
    help = "Print one log's context after every event: system, tools, messages, provider prompt, window."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, help="One session log file.")
        parser.add_argument(
            "--state-version", type=int, default=None, help="The state version to fold under (default: live)."
        )
        parser.add_argument("--json", action="store_true", help="Print one JSON object per line.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            projection = get_projection(KEY, options["state_version"])
        except UnknownProjection as error:
            raise CommandError(str(error)) from None
        session = self._only_session(options["path"])
        events, requests = self._read(session)
        as_json = options["json"]
        if not as_json:
            self.stdout.write(
                f"{'seq':>7}  {'type':30} {'system':>9} {'tools':>9} {'messages':>9} {'inferred':>9} "
                f"{'provider':>9} {'window':>9}"
            )
        by_seq = {event.seq: event for event in events}
        views = (
            (by_seq[step.seq], projection.view_json(step.view)) for step in fold_views(projection, events)
        )
        try:
            for row in context_rows(views, requests, host=host_of_format(session.format)):
                if as_json:
                    self.stdout.write(json.dumps(row.to_json()))
                else:
                    self.stdout.write(_table_line(row))
        except FoldError as error:
            message = str(error.with_session(session.external_id))
            if as_json:
                self.stdout.write(json.dumps({"error": message}))
            raise CommandError(f"the fold stopped: {message}") from None

    def _only_session(self, path: Path) -> SessionImport:
        if not path.is_file():
            raise CommandError(f"{path}: not a file; pass one session log")
        try:
            sessions = read_sessions(path)
            session = next(sessions, None)
        except FormatError as error:
            raise CommandError(str(error)) from None
        if session is None:
            raise CommandError(f"{path}: no session in this file")
        if session.fatal:
            raise CommandError(f"{path}: {session.fatal}")
        return session

    def _read(self, session: SessionImport) -> tuple[list[EventRecord], dict[int, RequestFigures]]:
        """The session's events and its calls' figures by answering event; bad lines are reported on
        stderr as they are met.

        Only the figures of a call are kept, not its body, so a long capture stays small in memory.
        """
        events: list[EventRecord] = []
        requests: dict[int, RequestFigures] = {}
        for item in session.items:
            if isinstance(item, EventRecord):
                events.append(item)
            elif isinstance(item, RequestRecord):
                seq = answering_seq(events[-1] if events else None)
                if seq is None:
                    continue
                try:
                    requests[seq] = request_figures(item, host=host_of_format(session.format))
                except PriceError as error:
                    self.stderr.write(f"{session.path}:{item.line}: request.body: {error}")
            elif isinstance(item, LineError):
                self.stderr.write(str(item))
        return events, requests


def _table_line(row: ContextRow) -> str:
    def cell(value: int | None) -> str:
        return f"{'—' if value is None else value:>9}"

    return (
        f"{row.seq:>7}  {row.type:30} {cell(row.system_tokens)} {cell(row.tools_tokens)} "
        f"{cell(row.message_tokens)} {cell(row.inferred_tokens)} {cell(row.provider_prompt_tokens)} "
        f"{cell(row.context_window)}"
    )
