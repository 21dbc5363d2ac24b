"""The cyclic garbage collector held off while a command line starts.

Importing Django, the apps and their models allocates a few hundred thousand objects that live as
long as the process, and the collector's passes, triggered by those allocations, walk them again
and again and free nothing: 20 to 30 ms of every ``manage.py`` or ``cachescope`` run, a tenth of an
``ingest`` that finds nothing new. The launcher pauses the collector before Django loads; once the
apps are ready (:meth:`dashboard.apps.DashboardConfig.ready`, the last app's), what start-up built
is frozen, left out of every later pass, and the collector runs again as usual.

A process started otherwise (a WSGI server, a Celery worker, the tests) never pauses it, so
``resume`` leaves it as it is.
"""

from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    """Hold the collector off until :func:`resume`; for a launcher, before it sets Django up.

    Nothing happens where the apps are ready already (a launcher called again in one process):
    no ``ready`` would come to turn it back on.
    """
    from django.apps import apps

    global _paused
    if gc.isenabled() and not apps.ready:
        gc.disable()
        _paused = True


def resume() -> None:
    """Freeze what start-up built and turn the collector back on, if :func:`pause` turned it off."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
