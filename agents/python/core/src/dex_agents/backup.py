"""Online backups of a SQLite database (`dex-agents backup`).

Copying the file with `cp` while Workers write can tear it: the main file and its WAL are
copied at different moments. SQLite's online backup API copies one consistent snapshot
through an ordinary read transaction, which in WAL mode blocks no writer, so Workers and
clients go on while it runs. The copy is written beside its destination under a temporary
name and renamed into place once complete, so a backup that failed never looks like one.
Postgres has its own tools (`pg_dump`); docs/deployment.md says how to back up and restore
both, and what a restore means for the writes that ran after the backup.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from .errors import BackupError

# How long the backup waits for a writer's lock (a checkpoint) before it gives up.
BUSY_TIMEOUT_SECONDS = 30.0


def backup_sqlite(database_url: str, target: str | Path) -> int:
    """Copies the SQLite database of `database_url` (a `sqlite:///` URL) to `target`, a new
    file, while other processes use it; returns the copy's size in bytes. The copy is a
    database of its own: point a deployment's URL at it (or at a copy of it) to restore."""
    source = _sqlite_path(database_url)
    target = Path(target).absolute()
    if target.exists():
        raise BackupError(f"{target} already exists: give a new file to back up to")
    if not target.parent.is_dir():
        raise BackupError(f"the directory of {target} does not exist: create it first")
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        _copy(source, partial)
        os.replace(partial, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
    return target.stat().st_size


def _copy(source: Path, partial: Path) -> None:
    reading = sqlite3.connect(source, timeout=BUSY_TIMEOUT_SECONDS)
    try:
        writing = sqlite3.connect(partial)
        try:
            reading.backup(writing)  # every page in one step: one consistent snapshot
            # A standalone file: no WAL beside it, whatever mode the copy's header records.
            writing.execute("PRAGMA journal_mode=DELETE")
        finally:
            writing.close()
    except sqlite3.Error as error:
        raise BackupError(f"could not back up {source}: {error}") from None
    finally:
        reading.close()
    with open(partial, "rb") as copy:
        os.fsync(copy.fileno())


def _sqlite_path(database_url: str) -> Path:
    if not database_url.startswith("sqlite:///"):
        raise BackupError(
            "dex-agents backup copies a SQLite database; back up Postgres with pg_dump "
            "(pg_dump -Fc --file FILE URL), as docs/deployment.md describes"
        )
    path = Path(database_url.removeprefix("sqlite:///").split("?", 1)[0])
    if not path.is_file():
        raise BackupError(f"no SQLite database at {path}: check --database-url")
    return path
