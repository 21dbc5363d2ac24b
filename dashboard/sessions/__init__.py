"""Session pages: the list (filters, sort, keyset pages), a session's page with its context
breakdown, timeline and live panel, its summary columns and figures, the list's exports, and an
admin's move of a session to another source.

May import: ``dashboard.access`` (roles), ``dashboard.analysis``, ``dashboard.costs``,
``dashboard.fleet`` (client versions, rollups), ``dashboard.storage``, ``dashboard.web``,
``dashboard.models``, ``projections``.
"""
