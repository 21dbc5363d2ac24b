"""What each provider does with a prompt, as dated facts: caching rules, windows and prices per model,
how each scheme stores and finds prefixes, context windows, and the provider's own diagnosis of a
miss read from its response.

May import: the standard library and the log model at the top of ``projections``.
"""
