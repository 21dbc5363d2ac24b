"""The cache analysis, by stage: ``render/`` (requests as canonical units and their diff),
``predict/`` (what each provider's cache would serve), ``explain/`` (causes, remedies, verdicts,
self-checks), and over them one session's analysis (``analysis``, ``session_analysis``,
``transcript_analysis``, ``results``, ``cross_session``).

May import: ``projections.providers``, ``projections.formats`` (for ``explain`` of a file) and the log model.
"""
