"""``manage.py record``: record every model call a client makes, by standing in its request path.

Point a client's base URL at the proxy (Claude Code: ``ANTHROPIC_BASE_URL=http://127.0.0.1:8788``);
each call is forwarded to ``--upstream`` unchanged and stored under ``--source``, one session per
conversation. ``--diagnose`` also asks Anthropic why each call's cache missed.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.ingest.recording.archive import resume_conversations
from dashboard.ingest.recording.listen import ListenError, check_exposure, parse_listen
from dashboard.ingest.recording.proxy import DEFAULT_TOKEN_HEADER, ProxyServer, ProxySettings, RecordingProxy
from dashboard.ingest.recording.recorder_process import RecorderProcess
from dashboard.ingest.recording.spool import DEFAULT_MAX_BYTES, DEFAULT_MAX_FILES, Spool

TOKEN_ENV = "CACHESCOPE_RECORD_TOKEN"  # noqa: S105 (a variable name, not a secret)
STATUS_EVERY = 10.0
"""Seconds between status lines, printed only when something changed."""


class Command(BaseCommand):
    help = "Run a recording proxy for the Anthropic Messages and OpenAI Chat/Responses APIs."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--listen", default="127.0.0.1:8788", help="HOST:PORT to listen on.")
        parser.add_argument("--upstream", default="https://api.anthropic.com", help="The API to forward to.")
        parser.add_argument("--source", default="record", help="The source to file recorded sessions under.")
        parser.add_argument(
            "--diagnose", action="store_true", help="Ask Anthropic for its cache diagnostics on every call."
        )
        parser.add_argument(
            "--token",
            default=os.environ.get(TOKEN_ENV, ""),
            help=f"Recording token; prefer ${TOKEN_ENV}, which ps does not show.",
        )
        parser.add_argument(
            "--token-header", default=DEFAULT_TOKEN_HEADER, help="The header clients send the token in."
        )
        parser.add_argument("--connect-timeout", type=float, default=10.0, help="Seconds to reach upstream.")
        parser.add_argument(
            "--read-timeout", type=float, default=600.0, help="Longest upstream silence, in seconds."
        )
        parser.add_argument(
            "--spool-max-mb", type=float, default=DEFAULT_MAX_BYTES / 2**20, help="Spool size bound."
        )
        parser.add_argument(
            "--spool-max-files", type=int, default=DEFAULT_MAX_FILES, help="Spool file bound."
        )
        parser.add_argument(
            "--no-archive",
            action="store_true",
            help="Do not keep each session's calls whole as a claude-trace log under the data folder.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            address = parse_listen(options["listen"])
            check_exposure(address, options["token"])
        except ListenError as error:
            raise CommandError(str(error)) from None
        spool = Spool(
            Path(settings.DATA_DIR) / "record-spool",
            max_bytes=int(options["spool_max_mb"] * 2**20),
            max_files=options["spool_max_files"],
        )
        archive = None if options["no_archive"] else Path(settings.DATA_DIR) / "record" / options["source"]
        recorder = RecorderProcess(source_name=options["source"], spool=spool, archive=archive)
        proxy = RecordingProxy(
            ProxySettings(
                upstream=options["upstream"],
                diagnose=options["diagnose"],
                token=options["token"],
                token_header=options["token_header"],
                connect_timeout=options["connect_timeout"],
                read_timeout=options["read_timeout"],
            ),
            recorder,
        )
        if options["diagnose"] and archive is not None:
            # With --diagnose the proxy places calls itself: it takes up the recent conversations too.
            resume_conversations(proxy.conversations, archive)
        server = ProxyServer(proxy, address.host, address.port)
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        recorder.start()
        try:
            port = server.start()
        except OSError as error:
            recorder.stop()
            raise CommandError(f"cannot listen on {address.host}:{address.port}: {error}") from None
        self.stdout.write(
            f"recording on http://{address.host}:{port} -> {options['upstream']} as source "
            f"{options['source']!r}{' with cache diagnostics' if options['diagnose'] else ''}"
            f"{f', archived in {archive}' if archive else ''}",
        )
        self.stdout.flush()
        last = ""
        while not stop.wait(STATUS_EVERY):
            if failure := recorder.failure():
                # Forwarding goes on, so the client's work is not broken, but the user must know.
                self.stderr.write(f"error: {failure}")
            line = self._status(recorder)
            if line != last:
                self.stdout.write(line)
                self.stdout.flush()
                last = line
        server.stop()
        recorder.stop()
        self.stdout.write(self._status(recorder))

    def _status(self, recorder: RecorderProcess) -> str:
        counts = recorder.counts()
        held, files = recorder.spool.size()
        return (
            "stored {stored} call(s), spooled {spooled}, dropped {dropped}, failed {failed}".format(**counts)
            + f"; spool holds {files} batch(es), {held} bytes"
        )
