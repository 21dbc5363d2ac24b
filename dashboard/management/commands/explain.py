"""``manage.py explain PATH [--format F] [--json]``: a log file's cache analysis, storing nothing.

With ``--json`` the price table is read for each request's cost and miss cost (null without one);
nothing else touches the database."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from dashboard.analysis.explain import FileSession, explain_json, file_analyse, request_money, result_verdict
from dashboard.costs.pricing import Price, prices_load
from projections.cache.render.render_record import markers_sent
from projections.cache.results import RequestResult
from projections.formats import FORMAT_NAMES
from projections.normalized import FormatError


class Command(BaseCommand):
    help = (
        "Explain each request's cache behaviour in a log file: markers kept or broken, the first "
        "change and its cause, credited / wire allows / reported / predicted figures, the miss label, "
        "what it means, the remedy and the request's self-check warnings."
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, help="A log file or a folder of logs.")
        parser.add_argument("--format", choices=FORMAT_NAMES, help="Read every file as this format.")
        parser.add_argument(
            "--json",
            action="store_true",
            help="Print a JSON array, one object per request (default: a table).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            sessions = file_analyse(path=options["path"], format=options["format"])
        except FormatError as error:
            raise CommandError(str(error)) from None
        for session in sessions:
            for line_error in session.errors:
                self.stderr.write(str(line_error))
        if options["json"]:
            prices = self._prices()
            rows = []
            for session in sessions:
                money = request_money(session, prices)
                rows += [explain_json(r, money.get(r.key)) for r in session.analysis.results]
            self.stdout.write(json.dumps(rows, indent=2))
            return
        for session in sessions:
            self._table(session)

    def _prices(self) -> list[Price]:
        """The price table, or none when there is no database to read it from: the analysis needs
        none, so each cost is then null rather than the command refused."""
        try:
            return prices_load()
        except DatabaseError as error:
            self.stderr.write(f"no price table ({error}): every cost_usd is null; run manage.py migrate")
            return []

    def _table(self, session: FileSession) -> None:
        self.stdout.write(f"session {session.external_id}")
        header = (
            f"{'#':>4} {'lineage':8} {'model':28} {'credited':>9} {'wire':>9} {'read':>9} "
            f"{'pred.read':>9} {'write':>9} {'pred.wr':>9}  label / first change"
        )
        self.stdout.write(header)
        for result in session.analysis.results:
            self.stdout.write(_row(result))
            for sent in markers_sent(result.data, has_body=result.has_body) or ():
                self.stdout.write(
                    f"{'':>4}   sent marker {sent['ordinal']} at {sent['position']} ({sent['tier']}, "
                    f"{sent['ttl']}, {sent['prefix_tokens']} tokens)"
                    + (", automatic" if sent["automatic"] else "")
                )
            for marker in result.data["markers"]:
                self.stdout.write(
                    f"{'':>4}   marker {marker['ordinal']} at {marker['position']} ({marker['tier']}, "
                    f"{marker['prefix_tokens']} tokens): {marker['status']}"
                )
            self._verdict(result)
        self.stdout.write("")

    def _verdict(self, result: RequestResult) -> None:
        """The words under a request's row: what its label means, the remedy and its warnings."""
        said = result_verdict(result)
        if said.label or said.detail:
            what = said.badge
            if said.material:
                what += ", material"
            self.stdout.write(f"{'':>4}   verdict: {what}" + (f" — {said.detail}" if said.detail else ""))
        if said.remedy:
            self.stdout.write(f"{'':>4}   remedy: {said.remedy}")
        for warning in said.warnings:
            self.stdout.write(f"{'':>4}   warning {warning.kind}: {warning.message}")


def _figure(value: int | None) -> str:
    return "—" if value is None else str(value)


def _row(result: RequestResult) -> str:
    data = result.data
    figures = data["figures"]
    change = data["first_change"]
    what = result_verdict(result).badge
    if change is not None:
        what += f"; first change at {change['tier']}:{change['position']} ({change['cause']})"
    return (
        f"{data['ordinal'] + 1:>4} {data['lineage']:8} {str(data['model'])[:28]:28} "
        f"{_figure(figures['credited']):>9} {_figure(figures['wire_allows']):>9} "
        f"{_figure(figures['reported_read']):>9} {_figure(figures['predicted_read']):>9} "
        f"{_figure(figures['reported_write']):>9} {_figure(figures['predicted_write']):>9}  {what}"
    )
