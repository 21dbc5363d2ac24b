"""Database plumbing the capabilities share: COPY inserts, retrying a transaction the database gave
up, index hops for distinct values, pausing the garbage collector, psycopg timestamps, migrate hooks,
and the shared cache that answers as an empty one while Redis is down.

May import: Django, ``dashboard.models``, ``projections``. No page, task or capability package.
"""
