"""``manage.py demo``: generate the demo dataset, ingest it, create a demo admin and start the dashboard."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.staticfiles.storage import ManifestFilesMixin, staticfiles_storage
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from dashboard.demo import write_demo_dataset
from dashboard.demo.clock import DEMO_EPOCH
from dashboard.ingest.files import ingest_paths

DEMO_USER = "demo"


class Command(BaseCommand):
    help = "Set up a dashboard with demo data (idempotent) and serve it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--seed", type=int, default=7, help="Seed of the generated dataset.")
        parser.add_argument("--no-serve", action="store_true", help="Set up only; do not start the server.")
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000", help="Where to serve.")

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        root = Path(settings.DATA_DIR) / "demo"
        manifest = write_demo_dataset(root, seed=options["seed"])
        for source in manifest.sources:
            summary = ingest_paths(paths=[root / source], source_name=source)
            self.stdout.write(
                f"{source}: {summary.sessions} sessions, {summary.events_added} events and "
                f"{summary.requests_added} requests added, {summary.duplicate_events} events and "
                f"{summary.duplicate_requests} requests already stored, "
                f"{len(summary.errors)} errors"
            )
            for error in summary.errors:
                self.stderr.write(f"  {error}")
        if isinstance(staticfiles_storage, ManifestFilesMixin):
            # Pages link the hashed, compressed copies that collectstatic writes (see STORAGES).
            call_command("collectstatic", interactive=False, verbosity=0)
        password = self._demo_password()
        host = options["addrport"]
        # The dataset is deterministic, so its sessions keep the days they were generated for: the
        # overview's default range, the last days, would open empty on it.
        self.stdout.write(
            self.style.SUCCESS(
                f"\nOpen http://{host}/?range=all and log in as {DEMO_USER} / {password}\n"
                f"(the demo's sessions are dated from {DEMO_EPOCH:%Y-%m-%d}: the link shows all time)\n"
            )
        )
        if not options["no_serve"]:
            call_command("runserver", host, use_reloader=False)

    def _demo_password(self) -> str:
        """The demo admin's password: kept in the data folder so it stays the same across runs."""
        path = Path(settings.DATA_DIR) / "demo-password"
        if not path.exists():
            path.write_text(secrets.token_urlsafe(12))
            path.chmod(0o600)
        password = path.read_text().strip()
        user, _ = get_user_model().objects.get_or_create(username=DEMO_USER)
        user.is_staff = user.is_superuser = True
        user.set_password(password)
        user.save()
        return password
