"""``manage.py ingest PATH... [--format F] [--source NAME] [--watch]``: store agent logs in the dashboard.

Each file is read from where the last ingest of it stopped; an unchanged one costs a ``stat``.
``--watch`` goes on following the paths and stores what is written to them as it comes.

Without a broker, the folds and analyses of what was stored run in one background process once
the command has stored the rows (:mod:`dashboard.worker.drain`); ``--wait`` runs them first.
"""

from __future__ import annotations

import json
import os
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.ingest.followups import followups_deferred
from dashboard.ingest.jobs import ingest_job_claim, ingest_job_database_unavailable, ingest_job_run
from dashboard.management.progress import ProgressBar
from dashboard.models import IngestJob
from dashboard.storage.db_outage import DatabaseUnavailable
from projections.format_names import FORMAT_NAMES

EXIT_TRY_AGAIN = 75
"""sysexits' EX_TEMPFAIL: the database was unavailable; the same command later stores the rest."""


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
        parser.add_argument(
            "--watch", action="store_true", help="Go on following the paths; stop with Ctrl-C."
        )
        parser.add_argument(
            "--poll", action="store_true", help="With --watch: poll the files rather than wait for events."
        )
        parser.add_argument(
            "--wait",
            action="store_true",
            help="Fold and analyse what was stored before returning (without a broker they otherwise "
            "run in the background once the rows are stored).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        paths: list[Path] = options["paths"]
        if options["watch"]:
            self._watch(paths, options)
            return
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

        from dashboard.worker.drain import followups_in_background

        background = followups_in_background() and not options["wait"]
        try:
            with followups_deferred() if background else nullcontext([]) as deferred:
                summary = ingest_job_run(job_id=job.pk, owner=owner, on_progress=show)
        except DatabaseUnavailable as stopped:
            bar.close()
            # One line, not the driver's traceback; exit 75 (EX_TEMPFAIL): run it again later.
            self.stderr.write(f"ingest stopped: {stopped}; run the same ingest again to store the rest")
            ingest_job_database_unavailable(job_id=job.pk, owner=owner, stopped=stopped)
            raise SystemExit(EXIT_TRY_AGAIN) from None
        bar.close()
        drain = self._drain(deferred)

        if options["json"]:
            result = summary.as_dict() | {
                "job": job.pk,
                # The background drain folding and analysing them, for a script to wait on.
                "followups_in_background": {"sessions": len(set(deferred)), "pid": drain} if drain else None,
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
            files = summary.files
            if files is not None and (files.unchanged or files.resumed):
                self.stdout.write(
                    f"{files.unchanged} files unchanged, {files.resumed} read from where the last ingest "
                    f"stopped, {files.whole} read whole ({files.rewritten} of them rewritten since)"
                )
            for external_id, pk, name in summary.elsewhere:
                self.stdout.write(
                    f"{external_id}: already stored under source {name} (session {pk}); not stored again. "
                    f"An admin can move it on the page of ingest job {job.pk}."
                )
            unchanged = summary.duplicates or (files is not None and files.unchanged)
            if not summary.events_added and not summary.requests_added and unchanged:
                self.stdout.write("Nothing new: everything in these files was already stored.")
            if drain:
                self.stdout.write(
                    f"Folding and analysing {len(set(deferred))} sessions in the background (process "
                    f"{drain}); `manage.py report` waits for them."
                )
            if summary.followups_pending:
                self.stderr.write(
                    f"{len(summary.followups_pending)} sessions are stored, but their folds and analyses "
                    "could not be queued (the broker did not answer): ingest again once it is back."
                )
        if summary.errors and not summary.sessions and not summary.elsewhere:
            raise CommandError(f"no session could be read; {len(summary.errors)} errors")

    def _drain(self, deferred: list[int]) -> int | None:
        """Start the background drain of the follow-ups deferred; its pid, or ``None`` with none due.

        Should no process start (no fork allowed, a read-only data folder), they run here instead.
        """
        if not deferred:
            return None
        from dashboard.worker.drain import drain_start, outbox_drain

        try:
            return drain_start()
        except OSError as error:
            self.stderr.write(
                f"the folds and analyses of {len(set(deferred))} sessions could not start in the background "
                f"({error}); running them now"
            )
            outbox_drain()
            return None

    def _watch(self, paths: list[Path], options: dict[str, Any]) -> None:
        from dashboard.ingest.incremental.watch import PathWatcher

        watcher = PathWatcher(
            paths,
            source_name=options["source"],
            format=options["format"],
            out=self.stdout.write,
            polling=options["poll"],
        )
        self.stdout.write(f"Watching {', '.join(str(p) for p in paths)}; stop with Ctrl-C.")
        try:
            watcher.run()
        except KeyboardInterrupt:
            watcher.stop()
            self.stdout.write("Stopped watching.")
