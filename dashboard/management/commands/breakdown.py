"""``manage.py breakdown PATH [--state-version N] [--json]``: fold one log file's ``contextBreakdown``
event by event with the engine alone, without touching the database.

With ``--json`` every event prints one line ``{"seq", "type", "systemTokens", "messageTokens"}``;
a fold that stops prints a last line ``{"error": ...}`` and the command exits non-zero.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from projections.folds.registry import FoldError, UnknownProjection, fold_views, get_projection
from projections.formats import read_sessions
from projections.normalized import EventRecord, FormatError, LineError, SessionImport

KEY = "contextBreakdown"


class Command(BaseCommand):
    help = "Fold one session log's context breakdown event by event (no database)."

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
        as_json = options["json"]
        if not as_json:
            self.stdout.write(f"{'seq':>7}  {'type':30} {'system':>9} {'messages':>9}")
        types: dict[int, str] = {}
        try:
            for step in fold_views(projection, self._events(session, types)):
                view = projection.view_json(step.view)
                if as_json:
                    line = {"seq": step.seq, "type": types.pop(step.seq), **view}
                    self.stdout.write(json.dumps(line))
                else:
                    self.stdout.write(
                        f"{step.seq:>7}  {types.pop(step.seq):30} {view['systemTokens']:>9} "
                        f"{view['messageTokens']:>9}"
                    )
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

    def _events(self, session: SessionImport, types: dict[int, str]) -> Iterator[EventRecord]:
        """The session's events; bad lines are reported on stderr as they are met."""
        for item in session.items:
            if isinstance(item, EventRecord):
                types[item.seq] = item.type
                yield item
            elif isinstance(item, LineError):
                self.stderr.write(str(item))
