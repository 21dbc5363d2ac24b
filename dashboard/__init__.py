"""Cachescope's web app: models, services over the engine, background tasks and pages."""

from __future__ import annotations

from typing import Any

__all__ = ("celery_app",)


def __getattr__(name: str) -> Any:
    # The Celery app is loaded on first use (by the task modules, or `celery -A dashboard`), not by
    # every process that imports the app: a command such as `manage.py check` never needs it.
    if name == "celery_app":
        from dashboard.celery import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
