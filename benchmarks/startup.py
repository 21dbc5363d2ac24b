"""How long the command line takes to start: ``manage.py check`` and ``manage.py ingest --help``.

    python benchmarks/startup.py [--runs 15] [--importtime]

Each command runs in a fresh process, timed from outside, run by run in turn with three references:
``python -c pass`` (the interpreter alone), ``python -c "import django"``, and ``check`` of Django
alone: these settings without the dashboard app, its URLs and its middleware (the floor that Django,
the admin, auth, axes and the rest of the installed apps set, whatever Cachescope does). It prints the median
wall time and the median CPU time (user + system) of each; CPU time is the steadier figure on a
machine busy with other work. The children write their bytecode to a scratch folder and run once
untimed first, as an installed package would (its modules compiled once). ``--importtime`` then
prints the slowest imports of each command (``python -X importtime``), cumulative. Not part of the
test run.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

COMMANDS = {
    "python -c pass": ["-c", "pass"],
    'python -c "import django"': ["-c", "import django"],
    "check, Django alone": ["-m", "django", "check", "--settings", "startup_floor_settings"],
    "manage.py check": [str(ROOT / "manage.py"), "check"],
    "manage.py ingest --help": [str(ROOT / "manage.py"), "ingest", "--help"],
}

# The Django-alone reference: the dashboard's settings less its own app, middleware and URLs.
FLOOR_SETTINGS = """
from dashboard.settings import *  # noqa: F403

INSTALLED_APPS = [app for app in INSTALLED_APPS if app != "dashboard"]  # noqa: F405
MIDDLEWARE = [name for name in MIDDLEWARE if not name.startswith("dashboard.")]  # noqa: F405
ROOT_URLCONF = "startup_floor_urls"
"""
FLOOR_URLS = """
from django.contrib import admin
from django.urls import path

urlpatterns = [path("admin/", admin.site.urls)]
"""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15, help="Runs of each command.")
    parser.add_argument("--importtime", action="store_true", help="Also print the slowest imports.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cachescope-startup-") as scratch:
        env = {
            **os.environ,
            "PYTHONPYCACHEPREFIX": str(Path(scratch) / "pycache"),
            "CACHESCOPE_DATA_DIR": str(Path(scratch) / "data"),
        }
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        (Path(scratch) / "startup_floor_settings.py").write_text(FLOOR_SETTINGS)
        (Path(scratch) / "startup_floor_urls.py").write_text(FLOOR_URLS)
        env["PYTHONPATH"] = os.pathsep.join([scratch, str(ROOT)])
        walls: dict[str, list[float]] = {name: [] for name in COMMANDS}
        cpus: dict[str, list[float]] = {name: [] for name in COMMANDS}
        for argv in COMMANDS.values():
            _run(argv, env)  # untimed: compiles the bytecode
        for _ in range(args.runs):
            for name, argv in COMMANDS.items():
                wall, cpu = _run(argv, env)
                walls[name].append(wall)
                cpus[name].append(cpu)
        print(f"median of {args.runs} runs each, interleaved")
        print(f"{'command':<28} {'wall s':>8} {'cpu s':>7}")
        for name in COMMANDS:
            print(f"{name:<28} {statistics.median(walls[name]):8.3f} {statistics.median(cpus[name]):7.3f}")
        if args.importtime:
            for name, argv in COMMANDS.items():
                if name.startswith("manage.py"):
                    _print_importtime(name, argv, env)


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, *argv], env=env, cwd=ROOT, check=True, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def _print_importtime(name: str, argv: list[str], env: dict[str, str], top: int = 15) -> None:
    argv = [sys.executable, "-X", "importtime", *argv]
    done = subprocess.run(argv, env=env, cwd=ROOT, check=True, capture_output=True, text=True)
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _self, cumulative, module = line.removeprefix("import time:").split("|")
        depth = (len(module) - len(module.lstrip()) - 1) // 2
        if depth <= 1:
            rows.append((int(cumulative), "  " * depth + module.strip()))
    print(f"\n{name}: slowest imports (cumulative ms, top level and one below)")
    for cumulative, module in sorted(rows, reverse=True)[:top]:
        print(f"  {cumulative / 1000:8.1f}  {module}")


if __name__ == "__main__":
    main()
