"""gunicorn's settings for the dashboard: ``gunicorn dashboard.wsgi -c python:dashboard.gunicorn_conf``.

Threaded workers (``gthread``) rather than gunicorn's default ``sync`` ones: a sync worker tells
the arbiter it is alive only between requests, so one streaming a long export (a fleet's
``/requests/export.json`` takes minutes) is killed at ``timeout`` and the download ends cut off
with no error. A threaded worker's main loop keeps telling it while its threads serve, so
``timeout`` only catches a worker that is stuck, and a slow export still ends whole. Any setting
given on the command line (``--workers``, ``--bind``, ``--timeout``) overrides these.
"""

worker_class = "gthread"
threads = 4
"""Requests one worker serves at once; each thread keeps its own database connection."""
timeout = 30
