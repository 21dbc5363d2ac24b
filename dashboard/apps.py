from __future__ import annotations

from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "Cachescope"

    def ready(self) -> None:
        # The task modules register the work that follows each ingest (folds, analyses); import
        # them here so every process has them, whichever module it happens to load first.
        import dashboard.tasks  # noqa: F401
        from dashboard import role_sync

        role_sync.connect()
