"""The site's own health: whether the database, the task broker and the shared cache answer, and
``/healthz``, which reports them to a load balancer or a monitor.

May import: ``dashboard.ingest.followups`` (the broker check the ingestion API makes),
``dashboard.storage``, ``dashboard.env``. No page: ``/healthz`` touches no session and no user, so
it answers while the database is down.
"""
