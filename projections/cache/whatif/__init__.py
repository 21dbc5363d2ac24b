"""What a fix would save: a session replayed under the provider's cache rules with one change made.

The replay reuses the analysis's own pieces rather than rules of its own: the renderer and its
calibrated token counts (:mod:`projections.cache.render.rendering`), the lineages
(:mod:`projections.cache.predict.lineage`), the predictor and the dated rules table behind it
(breakpoints and their limit of four, the 20-block lookback, the minimum cacheable prefix per
model, the 5-minute and 1-hour lifetimes: :mod:`projections.cache.predict.prediction`,
:mod:`projections.providers.rules`, :mod:`projections.providers.mechanics`), the transcript rule
(:mod:`projections.cache.predict.transcript`), and the money vocabulary (:mod:`projections.money`),
which takes prices as plain data. One scenario alone is ``whatif_session(..., scenarios=[name])``.

Modules, in the order a replay uses them:

- :mod:`~projections.cache.whatif.scenarios`: the scenarios (name, doc, change, support and its
  reason) and their names;
- :mod:`~projections.cache.whatif.levers`, :mod:`~projections.cache.whatif.attribution`,
  :mod:`~projections.cache.whatif.stable_prefix`: what each scenario changes in one request;
- :mod:`~projections.cache.whatif.world`: one combination of changes with a cache state of its own;
- :mod:`~projections.cache.whatif.replay`, :mod:`~projections.cache.whatif.transcript_replay`: a
  session with bodies, every world in lockstep; a session without (a transcript);
- :mod:`~projections.cache.whatif.tally`, :mod:`~projections.cache.whatif.results`: the replayed
  usage by model, client release and recorded miss cause, and what it costs and saves;
- :mod:`~projections.cache.whatif.session`: :func:`~projections.cache.whatif.session.whatif_session`,
  the entry point.
"""
