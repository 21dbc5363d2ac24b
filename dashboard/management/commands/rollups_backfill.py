"""Rebuild the hourly and daily usage rollups from every stored request."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from dashboard.fleet.rollups import rollups_rebuild


class Command(BaseCommand):
    help = (
        "Rebuild the usage rollups the overview reads from every stored request: after a bulk load "
        "that bypassed ingest, or to check them. Ingest keeps them current on its own."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        hours = rollups_rebuild()
        self.stdout.write(f"rebuilt the usage rollups: {hours:,} hour rows and their days")
