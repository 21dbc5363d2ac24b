"""Ingest that costs only what is new: each log file's stored state (:class:`~dashboard.models.FileState`),
what a file's change asks for (skip, read from the offset, read whole and store its sessions anew),
following files as they are written (``manage.py ingest --watch``), and where the local agents
keep their logs.

Imports the ingest writer (:mod:`dashboard.ingest.files`), the readers of :mod:`projections.formats`
and the models; nothing imports it but the ingest command, the ``cachescope`` command and
:func:`dashboard.ingest.files.ingest_paths`.
"""
