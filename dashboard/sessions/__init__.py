"""Session pages: the list (filters, sort, keyset pages), a session's page with its context
breakdown, timeline and live panel, its summary columns and figures, and the list's exports.

May import: ``dashboard.analysis``, ``dashboard.costs``, ``dashboard.fleet`` (client versions),
``dashboard.storage``, ``dashboard.web``, ``dashboard.models``, ``projections``.
"""
