"""Who may do what: roles as Django groups, the admin's staff flag, the client address behind
trusted proxies, per-source API tokens, the login throttle's store and answer, and the admin pages.

May import: ``dashboard.web``, ``dashboard.models``, ``dashboard.costs`` (the price pages).
"""
