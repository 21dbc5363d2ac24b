"""Views named in the URLconf by their dotted path and imported on their first request.

Every management command's system checks import the URLconf. Importing the views with it would
pull in the whole engine behind them (the formats, the cache analysis, the charts), which
``manage.py check`` or ``ingest --help`` never use and which is most of their start-up time. A
``LazyView`` stands in for its view until Django resolves a request to it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any

from django.utils.module_loading import import_string


class LazyView:
    """A view function, imported from ``dotted_path`` the first time anything asks for it."""

    def __init__(self, dotted_path: str) -> None:
        self.dotted_path = dotted_path
        # What URLPattern.lookup_str and error pages read, known without the import.
        self.__module__, _, self.__qualname__ = dotted_path.rpartition(".")
        self.__name__ = self.__qualname__

    @cached_property
    def view(self) -> Callable[..., Any]:
        return import_string(self.dotted_path)

    def __call__(self, request, *args, **kwargs):
        return self.view(request, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        # Only reached for what the instance lacks: the flags that middleware reads from the
        # view it is about to run (csrf_exempt, login_required, …), which live on the view.
        if name == "dotted_path" or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.view, name)

    def __repr__(self) -> str:
        return f"<LazyView {self.dotted_path}>"
