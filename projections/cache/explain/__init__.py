"""Stage 3: why a request missed and what to do about it: causes and remedies, candidates for
usage-only logs, the provider's diagnosis beside ours, the figures put side by side, the verdict the
pages and ``explain`` print, and the self-check warnings.

May import: ``projections.cache.predict``, ``projections.cache.render``, ``projections.providers`` and
the log model.
"""
