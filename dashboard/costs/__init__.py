"""What tokens cost: prices by model from the price table, per request, session and fleet, and each
session's cost ledger.

May import: ``dashboard.storage``, ``dashboard.models``, ``projections``.
"""
