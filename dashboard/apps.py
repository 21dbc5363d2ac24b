from __future__ import annotations

from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "Cachescope"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created
        from django.db.models.signals import post_migrate

        from dashboard import startup_gc
        from dashboard.access import role_sync
        from dashboard.costs.migrate_hooks import make_missing_cost_ledgers
        from dashboard.fleet import rollup_signals  # noqa: F401  (connects the rollups to session deletes)
        from dashboard.ingest.followups import register_followups_module
        from dashboard.storage.postgres_timestamps import use_psycopg_timestamps

        # The task modules register the work that follows each ingest (folds, analyses). They load
        # Celery and the analysis engine, so they are imported on the first ingest that commits, not
        # here: commands that never ingest (check, --help, migrate) start without them.
        register_followups_module("dashboard.worker.tasks")
        role_sync.connect()
        connection_created.connect(use_psycopg_timestamps, dispatch_uid="cachescope-psycopg-timestamps")
        post_migrate.connect(make_missing_cost_ledgers, sender=self, dispatch_uid="cachescope-cost-ledgers")
        # The last app ready: everything start-up imported lives as long as the process.
        startup_gc.resume()
