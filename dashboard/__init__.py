"""Cachescope's web app: models, services over the engine, background tasks and pages."""

from dashboard.celery import app as celery_app

__all__ = ("celery_app",)
