"""``manage.py reanalyse [--session ID ...] [--source NAME]``: analyse stored sessions again, after an
upgrade whose release changed what the analysis concludes (a prediction rule, a verdict's wording),
so every request page reads the current rules and not the ones its session was analysed under.

Each session's analysis is queued as the session page's "Analyse again" button queues it: with a
broker, workers take them; on the embedded default they run here, one after another.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.models import Session, Source


class Command(BaseCommand):
    help = "Queue the analysis of stored sessions again (all with requests, or those named)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--session", type=int, action="append", help="Only this session id (repeatable).")
        parser.add_argument("--source", help="Only the sessions of this source.")

    def handle(self, *args: Any, **options: Any) -> None:
        # The analysis engine and the task module load here, not with the command's --help.
        from dashboard.analysis.stored_sessions import analysis_request
        from dashboard.worker.tasks import analyse_session_task

        sessions = Session.objects.filter(request_count__gt=0).order_by("id")
        if options["source"]:
            if not Source.objects.filter(name=options["source"]).exists():
                raise CommandError(f"--source: no source is named {options['source']!r}")
            sessions = sessions.filter(source__name=options["source"])
        if options["session"]:
            sessions = sessions.filter(pk__in=options["session"])
            missing = set(options["session"]) - set(sessions.values_list("pk", flat=True))
            if missing:
                raise CommandError(f"--session: no stored session with requests has id {sorted(missing)}")
        queued = 0
        # The ids first: on the embedded default each analysis runs and writes inside this loop.
        for session_id in list(sessions.values_list("pk", flat=True)):
            if analysis_request(session_id=session_id):
                analyse_session_task.delay(session_id)
                queued += 1
        self.stdout.write(f"{queued} session analyses queued again")
