"""``manage.py whatif PATH_OR_SESSION_ID [--scenario NAME ...] [--json]``: what a fix would save.

A path is read as a log file (or folder) without storing anything, as ``explain`` reads it; any
other argument names a stored session by its id or external id, read without changing anything.
Bad input (an unknown scenario, a session without requests, a model without a price, a file that
cannot be read) is refused with a message naming it and exit code 2.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.savings.inputs import WhatIfInputs
from dashboard.savings.refresh import SessionNotFoundError, file_whatif, session_find, session_whatif
from dashboard.web.money import usd
from projections.cache.whatif.results import ScenarioResult
from projections.cache.whatif.scenarios import SCENARIO_NAMES, UnknownScenarioError, scenario_named
from projections.cache.whatif.session import NoRequestsError, WhatIf
from projections.cache.whatif.tally import UnpricedModelError
from projections.formats import FORMAT_NAMES
from projections.normalized import FormatError

BAD_INPUT = 2
"""The exit code of every refusal: the input, not the program, is wrong."""


class Command(BaseCommand):
    help = (
        "Replay a session under the provider's cache rules with each fix made and say what it would "
        f"save: {', '.join(SCENARIO_NAMES)}."
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("target", help="A log file or folder, or a stored session's id or external id.")
        parser.add_argument(
            "--scenario",
            action="extend",
            nargs="+",
            metavar="NAME",
            help="Only these scenarios (as-recorded always comes first); default: all.",
        )
        parser.add_argument("--format", choices=FORMAT_NAMES, help="Read a log file as this format.")
        parser.add_argument(
            "--json",
            action="store_true",
            help="Print a JSON list, one object per scenario (default: a table).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        scenarios = options["scenario"]
        try:
            for name in scenarios or ():
                scenario_named(name)
            sessions = self._whatif(options["target"], scenarios, options["format"])
        except (UnknownScenarioError, SessionNotFoundError, FormatError, UnpricedModelError) as error:
            raise CommandError(str(error), returncode=BAD_INPUT) from None
        several = len(sessions) > 1
        if options["json"]:
            rows = [
                {"session": inputs.name, **row} if several else row
                for inputs, whatif in sessions
                for row in whatif.to_json()
            ]
            self.stdout.write(json.dumps(rows, indent=2))
            return
        for inputs, whatif in sessions:
            self._table(inputs.name, whatif)

    def _whatif(
        self, target: str, scenarios: list[str] | None, format: str | None
    ) -> list[tuple[WhatIfInputs, WhatIf]]:
        path = Path(target)
        if path.exists():
            try:
                found = file_whatif(path=path, scenarios=scenarios, format=format)
            except NoRequestsError as error:
                raise CommandError(str(error), returncode=BAD_INPUT) from None
            for inputs, _ in found.sessions:
                for line_error in inputs.errors:
                    self.stderr.write(str(line_error))
            for inputs in found.empty:
                self.stderr.write(f"session {inputs.name}: no request with reported usage, left out")
            return found.sessions
        session = session_find(target)
        try:
            whatif = session_whatif(session=session, scenarios=scenarios)
        except NoRequestsError as error:
            raise CommandError(
                f"session {session.pk} ({session.external_id}): {error}", returncode=BAD_INPUT
            ) from None
        return [(WhatIfInputs(session.external_id, [], []), whatif)]

    def _table(self, name: str, whatif: WhatIf) -> None:
        self.stdout.write(f"session {name}")
        self.stdout.write(
            f"{'scenario':22} {'requests':>8} {'uncached':>11} {'read':>11} {'write':>11} "
            f"{'cost':>10} {'saving':>10}  change / why not"
        )
        for result in whatif.results:
            self.stdout.write(_row(result))
        self.stdout.write("")


def _money(value: Decimal | None) -> str:
    """Dollars as the pages write them, a negative saving (a change that costs more) as -$0.03."""
    return usd(value)


def _count(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def _row(result: ScenarioResult) -> str:
    tokens = result.tokens
    what = result.change if result.supported else f"not supported: {result.reason}"
    if result.combination:
        what = " + ".join(result.combination) + (f": {what}" if what else "")
    return (
        f"{result.scenario:22} {result.requests:>8,} "
        f"{_count(tokens.uncached_input if tokens else None):>11} "
        f"{_count(tokens.cache_read if tokens else None):>11} "
        f"{_count(tokens.written if tokens else None):>11} "
        f"{_money(result.cost):>10} {_money(result.saving):>10}  {what}"
    )
