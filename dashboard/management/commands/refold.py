"""``manage.py refold --key K --from N --to M [--session ID ...] [--async] [--json]``: re-fold stored logs
under two state versions of a key, compare them after every event and print the report.

``--resume RUN`` carries on a run whose worker died (in this process, or on a worker with ``--async``).
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Q

from dashboard.jobs.leases import Heartbeat, lease_seconds
from dashboard.management.progress import ProgressBar
from dashboard.models import FoldRun, Session
from dashboard.refold.report import FoldRunReport, fold_run_report
from dashboard.refold.runs import (
    RefoldError,
    fold_run_claim,
    fold_run_create,
    fold_run_renew,
    fold_run_resume,
    refold_run,
)
from dashboard.worker.tasks import refold_run_enqueue

LISTED = 20
"""Divergent and failed sessions listed in the text report; --json lists them all."""


class Command(BaseCommand):
    help = (
        "Re-fold stored session logs under two state versions of a projection and report where they differ."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--key", help="The projection key, e.g. contextBreakdown.")
        parser.add_argument("--from", dest="from_version", type=int, help="The old state version.")
        parser.add_argument("--to", dest="to_version", type=int, help="The new state version.")
        parser.add_argument(
            "--session",
            action="append",
            default=[],
            dest="sessions",
            help="A session's id or external id (repeatable); every session when omitted.",
        )
        parser.add_argument("--resume", type=int, metavar="RUN", help="Carry on an unfinished run.")
        parser.add_argument("--async", action="store_true", dest="background", help="Run it on a worker.")
        parser.add_argument("--json", action="store_true", help="Print the report as JSON.")

    def handle(self, *args: Any, **options: Any) -> None:
        run = self._resumed(options["resume"]) if options["resume"] else self._created(options)
        if options["background"]:
            if not refold_run_enqueue(run.pk, resume=bool(options["resume"])):
                raise CommandError(
                    f"the task broker did not answer: re-fold #{run.pk} is not queued; "
                    f"carry it on with --resume {run.pk} once the broker is back"
                )
            self.stdout.write(f"Re-fold #{run.pk} queued: {run.get_absolute_url()}")
            return
        owner = f"command:{run.pk}"
        fold_run_claim(run_id=run.pk, owner=owner, resume=True)
        bar = ProgressBar(
            run.sessions_total, label=f"re-fold {run.key} v{run.from_version}→v{run.to_version}"
        )
        bar.update(run.sessions_done)
        # The lease is renewed while this process folds, so no worker's sweep takes the run over.
        with Heartbeat(lambda: fold_run_renew(run_id=run.pk, owner=owner), seconds=lease_seconds()):
            run = refold_run(run_id=run.pk, on_progress=lambda current: bar.update(current.sessions_done))
        bar.close()
        report = fold_run_report(run=run)
        if options["json"]:
            self.stdout.write(json.dumps(report.as_dict(), indent=2))
        else:
            self.stdout.write(report_text(report))

    def _created(self, options: dict[str, Any]) -> FoldRun:
        missing = [name for name in ("key", "from_version", "to_version") if options[name] is None]
        if missing:
            raise CommandError("--key, --from and --to are required (or --resume RUN)")
        try:
            return fold_run_create(
                key=options["key"],
                from_version=options["from_version"],
                to_version=options["to_version"],
                session_ids=[session_pk(value) for value in options["sessions"]] or None,
            )
        except RefoldError as error:
            raise CommandError(str(error)) from None

    def _resumed(self, run_id: int) -> FoldRun:
        try:
            return fold_run_resume(run_id=run_id)
        except RefoldError as error:
            raise CommandError(str(error)) from None


def session_pk(value: str) -> int:
    """A session's primary key from its id or its external id."""
    match = Q(external_id=value)
    if value.isdigit():
        match |= Q(pk=int(value))
    found = list(Session.objects.filter(match).values_list("pk", flat=True)[:2])
    if len(found) != 1:
        reason = "no session" if not found else "more than one session"
        raise CommandError(f"--session {value}: {reason} has this id or external id")
    return found[0]


def report_text(report: FoldRunReport) -> str:
    """The report as an operator reads it in a terminal."""
    run = report.run
    wall = "—" if report.wall_seconds is None else f"{report.wall_seconds:.2f} s"
    lines = [
        f"Re-fold #{run.pk} {run.key} v{run.from_version} → v{run.to_version}: {run.status}",
        f"{report.sessions} sessions, {report.events} events: {report.identical} identical, "
        f"{report.diverged} diverged, {report.errored} errored",
    ]
    for size in (report.from_bytes, report.to_bytes):
        lines.append(
            f"state v{size.version}: {size.total:,} bytes retained (median {size.median:,.0f}, "
            f"max {size.max:,} per session)"
        )
    lines.append(f"wall time {wall}, folding {report.fold_seconds:.2f} s")
    for result in report.divergences[:LISTED]:
        lines.append(
            f"diverged: {result.session.external_id} (#{result.session_id}) at seq {result.divergent_seq} "
            f"({result.divergent_type}): v{run.from_version} {json.dumps(result.from_view)} vs "
            f"v{run.to_version} {json.dumps(result.to_view)}"
        )
    for result in report.errors[:LISTED]:
        lines.append(f"error: {result.session.external_id} (#{result.session_id}): {result.error}")
    hidden = max(0, len(report.divergences) - LISTED) + max(0, len(report.errors) - LISTED)
    if hidden:
        lines.append(f"… and {hidden} more; --json lists them all")
    return "\n".join(lines)
