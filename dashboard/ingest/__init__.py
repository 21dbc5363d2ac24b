"""Getting logs in: files and folders (``files``), uploads, jobs and their runs, the session writer
(events, requests, blocks), the follow-ups each ingest leaves (folds, analyses), and three doors of
their own: ``api/`` (the ingestion API), ``otlp/`` (the OTLP receiver) and ``recording/``
(``manage.py record``).

May import: ``dashboard.storage``, ``dashboard.jobs.leases``, ``dashboard.jobs.tally``,
``dashboard.fleet.rollups``, ``dashboard.refold`` (a host's projection cache), ``dashboard.web``,
``dashboard.models``, ``projections``.
"""
