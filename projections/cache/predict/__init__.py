"""Stage 2: which conversation each request belongs to, and what each provider's cache would serve it:
the cache models per platform, Anthropic's breakpoints and
lookback, automatic prefix caches, transcript-only sources, the host's own cache records, and when
a miss is material.

May import: ``projections.cache.render``, ``projections.providers`` and the log model.
"""
