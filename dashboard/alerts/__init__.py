"""Alerts: rules that watch each slice of the fleet (source, client release, model) for a cache
that regresses, the alerts they open and resolve, notifications by webhook and e-mail, the checks
that run them (Celery beat at scale, the in-process runner by default, ``manage.py alerts``),
Prometheus's ``/metrics``, and the alerts and rules pages.

May import: ``dashboard.costs``, ``dashboard.jobs``, ``dashboard.web``, ``dashboard.access`` (roles),
``dashboard.models``, ``projections``.
"""
