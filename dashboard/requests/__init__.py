"""Request pages: the requests list as a tool (filters, sort, exports) and one request's page with
its cache analysis and the side-by-side view of what changed.

May import: ``dashboard.analysis``, ``dashboard.costs``, ``dashboard.sessions`` (breakdowns),
``dashboard.storage``, ``dashboard.web``, ``dashboard.models``, ``projections``.
"""
