"""Stage 1 of the cache analysis: a provider request rendered into canonical, content-addressed
units (with their markers, the parameters that key a cache beside the prompt, token estimates
calibrated to the reported prompt, and the C hash), the diff of two renderings and the span that
changed, render records, and a stored request rebuilt into the body that was sent.

May import: ``projections.providers`` and the log model at the top of ``projections``.
"""
