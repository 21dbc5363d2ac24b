"""The machinery every background job shares: leases that hold only while a worker renews them, and
the options every task is declared with (idempotent, acknowledged late, retried on a database
hiccup).

May import: Django and ``dashboard.models``.
"""
