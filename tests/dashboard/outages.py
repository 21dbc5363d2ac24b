"""Real services the outage tests start and stop themselves: a Redis of their own on a free port,
a throwaway PostgreSQL cluster in a temporary folder.

Never the machine's shared Redis or PostgreSQL, which other processes use: each test starts its own
server in a temporary folder and stops that process, by its id, when done.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, *, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((HOST, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {HOST}:{port} after {timeout} s")


class RedisServer:
    """A ``redis-server`` of the test's own, which it can stop and start again on the same port."""

    def __init__(self, folder: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.skip("redis-server is not installed")
        self.binary = binary
        self.folder = folder
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://{HOST}:{self.port}/0"

    def start(self) -> None:
        command = [self.binary, "--port", str(self.port), "--bind", HOST, "--save", "", "--appendonly", "no"]
        self.process = subprocess.Popen(
            [*command, "--dir", str(self.folder)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        wait_for_port(self.port)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None


@contextmanager
def redis_server(folder: Path) -> Iterator[RedisServer]:
    server = RedisServer(folder)
    server.start()
    try:
        yield server
    finally:
        server.stop()


class PostgresCluster:
    """A throwaway PostgreSQL cluster in a temporary folder, on a free port, that a test stops as the
    outage it studies (``pg_ctl stop``) and starts again; never the machine's shared server.

    PostgreSQL refuses to run as root, so under root its commands run as the ``postgres`` user.
    """

    def __init__(self) -> None:
        initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
        if initdb is None or pg_ctl is None:
            pytest.skip("PostgreSQL's initdb and pg_ctl are not installed")
        self.initdb, self.pg_ctl = initdb, pg_ctl
        self.folder = Path(tempfile.mkdtemp(prefix="cachescope-pg-"))
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            runuser = shutil.which("runuser")
            try:
                account = pwd.getpwnam("postgres")
            except KeyError:
                pytest.skip("running as root with no postgres user to run a cluster as")
            if runuser is None:
                pytest.skip("running as root without runuser")
            os.chown(self.folder, account.pw_uid, account.pw_gid)
            self.as_user = [runuser, "-u", "postgres", "--"]
        self.port = free_port()
        self.data = self.folder / "data"

    def url(self, database: str) -> str:
        return f"postgres://postgres@{HOST}:{self.port}/{database}"

    def _run(self, *command: str) -> None:
        subprocess.run([*self.as_user, *command], check=True, capture_output=True, timeout=120)

    def init(self) -> None:
        self._run(self.initdb, "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses={HOST} -c fsync=off"
        log = str(self.folder / "server.log")
        self._run(self.pg_ctl, "-D", str(self.data), "-o", options, "-l", log, "-w", "start")

    def stop(self, mode: str = "fast") -> None:
        """``fast``: sessions are ended and their open transactions rolled back, as a restart does."""
        self._run(self.pg_ctl, "-D", str(self.data), "-m", mode, "-w", "stop")

    def create_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")  # type: ignore[arg-type]

    def remove(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped
            self.stop("immediate")
        shutil.rmtree(self.folder, ignore_errors=True)


@contextmanager
def postgres_cluster() -> Iterator[PostgresCluster]:
    cluster = PostgresCluster()
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        cluster.remove()


@contextmanager
def small_filesystem(folder: Path, *, size: str = "1m") -> Iterator[Path]:
    """``folder`` as a tmpfs of ``size``: a real file system that runs out of space (ENOSPC)."""
    folder.mkdir(parents=True, exist_ok=True)
    mount, umount = shutil.which("mount"), shutil.which("umount")
    if mount is None or umount is None:
        pytest.skip("mount is not installed")
    done = subprocess.run(
        [mount, "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small file system here: {done.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run([umount, str(folder)], check=True, timeout=30)
