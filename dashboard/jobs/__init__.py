"""The machinery every background job shares: leases that hold only while a worker renews them, the
options every task is declared with (idempotent, acknowledged late, retried on a database hiccup),
and the tally of what an ingest job stored, kept on its row as each of its transactions commits.

May import: Django and ``dashboard.models``.
"""
