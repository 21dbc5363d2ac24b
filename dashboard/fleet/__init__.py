"""The fleet at a glance: the overview page and its panels, the hourly and daily usage rollups they
read, the fleet's charts, client releases and the report rows for scripts.

May import: ``dashboard.costs``, ``dashboard.storage``, ``dashboard.web``, ``dashboard.models``,
``projections``.
"""
