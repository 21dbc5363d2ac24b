"""What a fix would save: the what-if engine's figures for stored sessions and log files.

This package owns the use cases around :mod:`projections.cache.whatif`: replaying a stored session
or a log file under the scenarios (:mod:`dashboard.savings.inputs` turns a stored session into the
engine's inputs, its bodies rebuilt a batch at a time), and keeping each session's results in
:class:`~dashboard.models.SessionSavings` and :class:`~dashboard.models.ScenarioSaving` so pages
rank sessions, sources, client releases, models and miss causes by what a fix would save without
replaying anything (:mod:`dashboard.savings.refresh`; :func:`session_savings_refresh` is what a
Celery task calls, by session id, after each analysis).

It may import :mod:`projections`, :mod:`dashboard.models` and the services it reads rows through
(:mod:`dashboard.analysis.stored_sessions`, :mod:`~dashboard.costs.pricing`,
:mod:`~dashboard.costs.session_costs`, :mod:`~dashboard.analysis.stored_requests`); never
tasks or views, which call it.

For a page:

- :func:`~dashboard.savings.refresh.session_savings` gives a session's stored figures, made again
  first when they are out of date; ``SessionSavings.results`` is the list ``manage.py whatif
  --json`` prints (one object per scenario: ``scenario``, ``supported``, ``reason``, ``change``,
  token buckets, ``cost_usd``, ``saving_usd``, ``touched_requests``; ``best`` adds ``combination``,
  ``as-recorded`` the reported figures and ``rules_error_usd``);
- :func:`~dashboard.savings.ranking.savings_ranked` sums one scenario's ``ScenarioSaving`` rows by
  source, client release, model or recorded miss cause over the sessions a page selects, and
  :func:`~dashboard.savings.ranking.sessions_ranked` lists sessions by their best saving;
- :func:`~dashboard.savings.request_fixes.request_fixes` gives one request's usage, cost and
  saving under each supported scenario, from ``SessionSavings.request_tokens`` (every request as
  recorded, under another scenario only those it changes);
- a request's cost and miss cost are ``RequestAnalysis.cost`` and ``RequestAnalysis.miss_cost``
  (:func:`projections.money.usage_cost`, :func:`projections.money.miss_cost`), so "$ lost to
  misses" over a range is a sum of one column.
"""
