"""Projections as stored rows: the incremental fold after each ingest, re-fold runs that compare two
state versions after every event, their reports and tallies, a host's own projection cache checked
against ours, the fold tasks and the projections pages.

May import: ``dashboard.storage``, ``dashboard.jobs.leases``, ``dashboard.web``, ``dashboard.models``,
``projections``.
"""
