"""Database outages for tests: a private PostgreSQL server that a test may stop and start,
and an exclusive lock held on a SQLite file by another connection."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

# Takes the database away while it is entered.
Outage = Callable[[], AbstractContextManager[None]]


def postgres_bin() -> str | None:
    """The newest installed PostgreSQL's bin directory, if any."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return os.path.dirname(found[-1]) if found else None


class PostgresServer:
    """A throwaway PostgreSQL server on loopback that belongs to one test."""

    def __init__(self, bin_dir: str) -> None:
        self.bin_dir = bin_dir
        self.data = tempfile.mkdtemp(prefix="dex-outage-pg-")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        if os.getuid() == 0:
            shutil.chown(self.data, "postgres", "postgres")
        self._run("initdb", "-D", self.data, "-U", "postgres", "--auth=trust", "-E", "UTF8")

    def _run(self, tool: str, *args: str) -> None:
        command = [os.path.join(self.bin_dir, tool), *args]
        if os.getuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k /tmp -c fsync=off"
        log = os.path.join(self.data, "server.log")
        self._run("pg_ctl", "-D", self.data, "-l", log, "-w", "-o", options, "start")

    def stop(self) -> None:
        """Stops the server at once: open connections break, new ones are refused."""
        self._run("pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop")

    def remove(self) -> None:
        subprocess.run(
            [os.path.join(self.bin_dir, "pg_ctl"), "-D", self.data, "-m", "immediate", "stop"],
            capture_output=True,
            check=False,
            user="postgres" if os.getuid() == 0 else None,
        )
        shutil.rmtree(self.data, ignore_errors=True)


@contextmanager
def sqlite_locked(path: str) -> Iterator[None]:
    """Holds an exclusive lock on a SQLite file in WAL mode: every other connection's writes
    wait, then fail with `database is locked` (reads go on, as WAL allows)."""
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout=60000")
        conn.execute("BEGIN EXCLUSIVE")
        locked.set()
        release.wait()
        conn.execute("COMMIT")
        conn.close()

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert locked.wait(60), "could not lock the SQLite file"
    try:
        yield
    finally:
        release.set()
        holder.join(60)


@contextmanager
def outage_database(kind: str, tmp_path: Path) -> Iterator[tuple[str, Outage]]:
    """A database of the test's own, `kind` "sqlite" (a file in `tmp_path`) or "postgres" (a
    private server), and a way to take it away."""
    if kind == "sqlite":
        path = tmp_path / "dex.sqlite"
        yield f"sqlite:///{path}", lambda: sqlite_locked(str(path))
        return
    bin_dir = postgres_bin()
    assert bin_dir
    server = PostgresServer(bin_dir)
    server.start()

    @contextmanager
    def stopped() -> Iterator[None]:
        server.stop()
        try:
            yield
        finally:
            server.start()

    try:
        yield server.url, stopped
    finally:
        server.remove()
