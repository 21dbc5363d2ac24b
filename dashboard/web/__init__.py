"""Web plumbing every page shares: middleware, htmx request type, lazy views, query-string readers,
how money, shares and time ranges are written, Plotly figure dicts, static file names, the glossary.

May import: Django, ``dashboard.models``, ``projections``. Imports no capability package: they import it.
"""
