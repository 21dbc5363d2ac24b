"""The collector is held off while a command line starts and runs again once the apps are ready."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

from dashboard import startup_gc

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import gc, sys
from dashboard import startup_gc
startup_gc.pause()
print(gc.isenabled())
import django, os
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
django.setup()
print(gc.isenabled(), gc.get_freeze_count() > 10_000)
"""


def test_a_launcher_pauses_the_collector_until_the_apps_are_ready() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True)
    # Off during start-up; on again once ready, with what start-up built frozen out of its passes.
    assert done.stdout.split() == ["False", "True", "True"]


def test_pausing_once_the_apps_are_ready_leaves_the_collector_on() -> None:
    # This process set Django up already: no ready() would come to turn the collector back on.
    startup_gc.pause()
    assert gc.isenabled()
    startup_gc.resume()
    assert gc.isenabled()
