"""The cache analysis of stored sessions: the engine's verdicts written as analysis rows, the figures
the lists sort on, self-check warnings and what each puts at stake, ``manage.py explain``, the
analysis task, and the warnings inbox.

May import: ``dashboard.costs``, ``dashboard.storage``, ``dashboard.jobs.leases``, ``dashboard.web``,
``dashboard.models``, ``projections``.
"""
