"""WSGI entry point for gunicorn and other servers."""

from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
application = get_wsgi_application()

from django.conf import settings  # noqa: E402  (after setup: the settings are read by then)

if settings.CELERY_TASK_ALWAYS_EAGER:
    # No broker, so no Celery beat: the server evaluates the alert rules itself while it runs.
    from dashboard.alerts.runner import alerts_runner_start

    alerts_runner_start()
