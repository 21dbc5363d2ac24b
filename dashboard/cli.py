"""``cachescope``: the dashboard of this machine's own agent logs, in one command.

With no arguments it sets up the embedded default where needed (a SQLite database and its data
folder under ``$XDG_DATA_HOME/cachescope``, migrated; a login kept there), ingests the local Claude
Code transcripts and Codex rollouts (each file from where the last run stopped), follows them as
they are written, serves the dashboard and prints its address and login.

``cachescope ingest|serve|whatif|report ...`` are the management commands of the same names
(``serve`` is ``runserver``). Django loads only once a command needs it, so ``--help`` is instant.
"""

from __future__ import annotations

import argparse
import os
import secrets
import socket
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dashboard.ingest.incremental.watch import PathWatcher

ALIASES = {"ingest": "ingest", "serve": "runserver", "whatif": "whatif", "report": "report"}
"""``cachescope <alias>`` runs ``manage.py <command>`` with the arguments that follow."""
LOGIN_USER = "cachescope"
SOURCE = "local"
DEFAULT_PORT = 8000


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cachescope",
        description=(
            "Show why your agents' prompt caches hit or miss. With no command: ingest this machine's "
            "Claude Code and Codex logs, follow them, and serve the dashboard."
        ),
        epilog=(
            "commands: ingest PATH... (manage.py ingest), serve [ADDR:PORT] (manage.py runserver), "
            "whatif ..., report ...; 'cachescope COMMAND --help' for each."
        ),
    )
    parser.add_argument("--host", default="127.0.0.1", help="Address to serve on (default 127.0.0.1).")
    parser.add_argument(
        "--port",
        type=int,
        default=None,
        help=f"Port to serve on (default {DEFAULT_PORT}, or a free one; 0: a free one).",
    )
    parser.add_argument("--no-watch", action="store_true", help="Ingest once; do not follow the logs.")
    parser.add_argument("--no-serve", action="store_true", help="Set up and ingest only.")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The ``cachescope`` console command."""
    from dashboard import startup_gc

    startup_gc.pause()  # until the apps are ready: start-up makes no garbage worth a pass
    args = list(sys.argv[1:] if argv is None else argv)
    _embedded_defaults()
    if args and args[0] in ALIASES:
        return _alias(ALIASES[args[0]], args[1:])
    options = _parser().parse_args(args)
    return _dashboard(options)


def data_home() -> Path:
    """Where the embedded default keeps its database, secret key and login: ``$XDG_DATA_HOME`` or
    ``~/.local/share``, then ``cachescope``."""
    base = os.environ.get("XDG_DATA_HOME", "").strip() or str(Path.home() / ".local" / "share")
    return Path(base) / "cachescope"


def _embedded_defaults() -> None:
    """Settings a user's own machine needs and a checkout's ``manage.py`` takes from the checkout."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    if not os.environ.get("CACHESCOPE_DATA_DIR", "").strip():
        os.environ["CACHESCOPE_DATA_DIR"] = str(data_home())
    if not os.environ.get("STATIC_ROOT", "").strip():
        os.environ["STATIC_ROOT"] = str(Path(os.environ["CACHESCOPE_DATA_DIR"]) / "static")


def _alias(command: str, args: list[str]) -> int:
    import django
    from django.core.management import execute_from_command_line, get_commands

    django.setup()
    if command not in get_commands():
        print(f"cachescope: this installation has no {command!r} command", file=sys.stderr)
        return 2
    execute_from_command_line(["cachescope", command, *args])
    return 0


def local_log_folders() -> list[tuple[str, Path]]:
    """The folders where this machine's agents write their logs, as they name them: Claude Code's
    ``projects`` under each of ``CLAUDE_CONFIG_DIR`` (comma-separated, as ccusage reads it) or
    ``~/.config/claude`` and ``~/.claude``; Codex's ``sessions`` under ``CODEX_HOME`` or ``~/.codex``."""
    home = Path.home()
    claude = os.environ.get("CLAUDE_CONFIG_DIR", "").strip()
    claude_dirs = (
        [Path(part.strip()).expanduser() for part in claude.split(",") if part.strip()]
        if claude
        else [home / ".config" / "claude", home / ".claude"]
    )
    codex = os.environ.get("CODEX_HOME", "").strip()
    codex_dir = Path(codex).expanduser() if codex else home / ".codex"
    return [("Claude Code", folder / "projects") for folder in claude_dirs] + [
        ("Codex", codex_dir / "sessions")
    ]


def _dashboard(options: argparse.Namespace) -> int:
    import django

    django.setup()
    from django.core.management import call_command

    from dashboard.ingest.incremental.watch import PathWatcher

    data = Path(os.environ["CACHESCOPE_DATA_DIR"])
    print(f"Data folder: {data}", flush=True)
    # The static files are collected (once a release) while the database is migrated and the logs read.
    collecting = threading.Thread(target=_collect_static, args=(data,), name="cachescope-static")
    if not options.no_serve:
        collecting.start()
    call_command("migrate", interactive=False, verbosity=0)
    password = _login_password(data)
    folders = []
    for agent, folder in local_log_folders():
        if folder.is_dir():
            folders.append(folder)
            print(f"{agent} logs: {folder}", flush=True)
    if not folders:
        shown = ", ".join(str(folder) for _agent, folder in local_log_folders())
        print(f"No agent logs found yet (looked in {shown}).", flush=True)
    watcher = PathWatcher(folders, source_name=SOURCE, out=lambda line: print(line, flush=True))
    if folders:
        from dashboard.models import Session

        watcher.ingest_once()
        stored = Session.objects.filter(source__name=SOURCE).count()
        print(f"{stored} sessions of the local logs are stored.", flush=True)
    if not options.no_watch and folders:
        threading.Thread(target=_follow, args=(watcher,), name="cachescope-watch", daemon=True).start()
    if options.no_serve:
        return 0
    collecting.join()
    port = (
        options.port
        if options.port
        else _free_port(options.host, DEFAULT_PORT if options.port is None else 0)
    )
    print(f"Cachescope is at http://{options.host}:{port}/ (log in as {LOGIN_USER} / {password})", flush=True)
    try:
        call_command("runserver", f"{options.host}:{port}", use_reloader=False)
    except KeyboardInterrupt:
        pass  # Ctrl-C: the server has stopped
    finally:
        # A stored batch is committed with its files' states, so stopping between two loses nothing.
        watcher.stop()
    return 0


def _follow(watcher: PathWatcher) -> None:
    from django.db import connection

    try:
        watcher.run()
    finally:
        connection.close()


def _collect_static(data: Path) -> None:
    """Write the hashed, compressed static files the pages link (see ``STORAGES``), once a release."""
    from importlib.metadata import PackageNotFoundError, version

    from django.contrib.staticfiles.storage import ManifestFilesMixin, staticfiles_storage
    from django.core.management import call_command

    if not isinstance(staticfiles_storage, ManifestFilesMixin):
        return
    try:
        release = version("cachescope")
    except PackageNotFoundError:
        release = "checkout"
    marker = data / "static-release"
    if marker.is_file() and marker.read_text() == release and Path(os.environ["STATIC_ROOT"]).is_dir():
        return
    print("Collecting the pages' static files (once a release)...", flush=True)
    call_command("collectstatic", interactive=False, verbosity=0)
    marker.write_text(release)


def _login_password(data: Path) -> str:
    """The local login's password, made once and kept in the data folder (readable by its owner
    alone), and its user, an admin, made or put back to it."""
    from django.contrib.auth import get_user_model

    path = data / "login-password"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(12))
        path.chmod(0o600)
    password = path.read_text().strip()
    user, _ = get_user_model().objects.get_or_create(username=LOGIN_USER)
    if not user.check_password(password) or not user.is_superuser:
        user.is_staff = user.is_superuser = True
        user.set_password(password)
        user.save()
    return password


def _free_port(host: str, preferred: int) -> int:
    """``preferred`` when nothing listens there, else a port the system has free."""
    for port in (preferred, 0):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind((host, port))
            except OSError:
                continue
            return int(probe.getsockname()[1])
    raise OSError(f"no free port on {host}")


if __name__ == "__main__":
    sys.exit(main())
