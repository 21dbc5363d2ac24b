"""The request type of every view: ``HtmxMiddleware`` (in ``MIDDLEWARE``) gives each request ``htmx``.

``request.htmx`` is true for a request htmx sent (it carries ``HX-Request``); a view answers one with
the fragment it swaps in instead of the whole page.
"""

from __future__ import annotations

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """A request that went through django-htmx's middleware, as django-htmx documents typing it."""

    htmx: HtmxDetails
