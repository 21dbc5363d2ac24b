#!/usr/bin/env python
"""Cachescope's command line: runserver, ingest, report, demo, refold, breakdown, explain, ..."""

from __future__ import annotations

import os
import sys


def main() -> None:
    from dashboard import startup_gc

    startup_gc.pause()  # until the apps are ready: start-up makes no garbage worth a pass
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
