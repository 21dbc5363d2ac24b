"""``manage.py ingest PATH... [--format F] [--source NAME]``: store agent logs in the dashboard."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.ingest.jobs import ingest_job_claim, ingest_job_run
from dashboard.management.progress import ProgressBar
from dashboard.models import IngestJob
from projections.format_names import FORMAT_NAMES


class Command(BaseCommand):
    help = "Ingest agent logs (files or folders); detects each file's format unless --format is given."
    # Run after every agent session (a hook, a cron job), so its start-up is felt: the system checks
    # import every view to check the URLs and templates, a fifth of a second that says nothing about
    # reading logs. The server and ``manage.py check`` run them.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", type=Path, help="Files or folders to read.")
        parser.add_argument("--format", choices=FORMAT_NAMES, help="Read every file as this format.")
        parser.add_argument("--source", default="local", help="The source (agent host) to file them under.")
        parser.add_argument("--json", action="store_true", help="Print the summary as JSON.")

    def handle(self, *args: Any, **options: Any) -> None:
        paths: list[Path] = options["paths"]
        job = IngestJob.objects.create(
            kind=IngestJob.Kind.COMMAND,
            label=", ".join(str(p) for p in paths)[:500],
            source_name=options["source"],
            format=options["format"] or "",
            paths=[str(p) for p in paths],
        )
        owner = f"command:{os.getpid()}"
        ingest_job_claim(job_id=job.pk, owner=owner)
        bar = ProgressBar(0, label="ingest")

        def show(current: IngestJob) -> None:
            bar.total = current.bytes_total
            bar.update(current.bytes_done)

        summary = ingest_job_run(job_id=job.pk, owner=owner, on_progress=show)
        bar.close()

        if options["json"]:
            result = summary.as_dict() | {
                "job": job.pk,
                "error_lines": [str(e) for e in summary.errors],
                "notice_lines": [str(n) for n in summary.notices],
                "stored_elsewhere": [
                    {"session_id": external_id, "stored_as": pk, "source": name}
                    for external_id, pk, name in summary.elsewhere
                ],
            }
            self.stdout.write(json.dumps(result, indent=2))
        else:
            for error in summary.errors:
                self.stderr.write(str(error))
            for notice in summary.notices:
                self.stderr.write(f"notice: {notice}")
            counts = summary.as_dict()
            self.stdout.write(
                "{sessions} sessions ({sessions_added} new, {sessions_updated} updated, {sessions_unchanged} "
                "unchanged), {events} events, {requests} requests added; "
                "{duplicate_events} duplicate events, {duplicate_requests} duplicate requests skipped; "
                "{errors} errors, {notices} notices".format(**counts)
            )
            for external_id, pk, name in summary.elsewhere:
                self.stdout.write(
                    f"{external_id}: already stored under source {name} (session {pk}); not stored again. "
                    f"An admin can move it on the page of ingest job {job.pk}."
                )
            if not summary.events_added and not summary.requests_added and summary.duplicates:
                self.stdout.write("Nothing new: everything in these files was already stored.")
            if summary.followups_pending:
                self.stderr.write(
                    f"{len(summary.followups_pending)} sessions are stored, but their folds and analyses "
                    "could not be queued (the broker did not answer): ingest again once it is back."
                )
        if summary.errors and not summary.sessions and not summary.elsewhere:
            raise CommandError(f"no session could be read; {len(summary.errors)} errors")
