"""Wake-ups between the processes that share one SQLite file, by Unix datagram sockets.

SQLite has no NOTIFY. Each process that waits on the file (a Worker, a client) binds a
datagram socket in a directory named after the file; a process that commits wake-ups sends
the woken session IDs to every socket there, right after its commit. A waiting Step or client
wakes within a fraction of a millisecond, and an idle process spends no CPU on looking.

A datagram is a hint, never the record: the wake-up rows in the database are. A listener
finds out when it may have missed one, and then reads those rows:
- a sender never blocks, so a listener whose queue is full misses datagrams. Linux drops one
  only when the listener's queue holds more than `net.unix.max_dgram_qlen` datagrams, all of
  which the listener's next drain reads: a drain of that many reads the rows. Elsewhere the
  limit is in bytes, so every drain reads the rows;
- each sender numbers its datagrams per listener, so one that failed in any other way shows
  as a gap in the numbers;
- a sender that dies between its commit and its send leaves no trace, so a listener also
  reads the rows when the file changed, once every `FALLBACK_POLL_SECONDS`.

A client that waits only for turns (`run_turn`) listens under a name that says so, and a
sender sends it only the commits that wake a turn key (a turn's outcome or an interrupt) or
every session: the other commits of a turn, some eight, then neither wake that process nor
let it take the core from the committing Worker. The client binds a socket for every wake-up
the first time it waits for anything else.

Where a socket cannot be bound (no AF_UNIX datagrams, as on Windows; a path too long; a
directory of another user) the process falls back to probing the file every few
milliseconds, and processes that do have sockets still see its commits by their own probe.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

# How often a process with a socket probes the file for commits that no datagram announced.
FALLBACK_POLL_SECONDS = 1.0
# The longest datagram sent; longer lists of names become "*" (every session), which fits
# every platform's default datagram size.
MAX_NAMES_BYTES = 1500
_MAX_DATAGRAM_BYTES = 2048
# A listener forgets its senders' numbers beyond this many senders (short-lived clients); a
# sender it forgot then reads as a gap once, which costs one read of the rows.
_MAX_SENDERS = 1024


def wake_directory(database_path: str) -> Path:
    """The directory of the sockets of every process that waits on this SQLite file: one per
    file and user, short enough for a socket path on every platform."""
    key = hashlib.sha256(os.path.realpath(database_path).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"dex-{os.getuid()}" / key


def _linux_queue_limit() -> int | None:
    try:
        return int(Path("/proc/sys/net/unix/max_dgram_qlen").read_text())
    except (OSError, ValueError):
        return None


# How many queued datagrams mean that some may have been dropped; None: any may have been.
_QUEUE_LIMIT = _linux_queue_limit()


def _ours(*directories: Path) -> bool:
    """Whether this user owns the directories and nobody else may write to them: another
    user's directory could collect the session IDs sent into it."""
    try:
        for path in directories:
            info = path.stat()
            if info.st_uid != os.getuid() or info.st_mode & 0o022:
                return False
    except OSError:
        return False
    return True


# The wake-up keys of turns (`store.turn_wake_key`): what a turns-only listener hears.
TURN_KEY_PREFIX = "\x1e"
# The end of a turns-only listener's name (origins are hexadecimal).
_TURNS_ONLY = "-turns"


def _socket_name(origin: str, turns_only: bool = False) -> str:
    return origin[:16] + (_TURNS_ONLY if turns_only else "")


def _heard_by_turns_only(names: str) -> bool:
    return names == "*" or TURN_KEY_PREFIX in names


def _datagram_socket() -> socket.socket | None:
    if not hasattr(socket, "AF_UNIX"):
        return None
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    except OSError:
        return None
    sock.setblocking(False)
    return sock


@dataclass(frozen=True)
class WakeNote:
    """One datagram: the sessions a commit of process `origin` woke; None for every session."""

    origin: str
    sessions: frozenset[str] | None


class WakeSender:
    """Sends each commit's woken sessions to every other listening process of the file.
    Used under the database's write lock, so one thread at a time."""

    def __init__(self, directory: Path, origin: str) -> None:
        self._directory = directory
        self._origin = origin
        self._own = _socket_name(origin)
        self._socket = _datagram_socket()
        self._sequences: dict[str, int] = {}
        self._checked: Path | None = None  # the directory once found safe to send into

    def send(self, names: str) -> None:
        """`names`: the woken session IDs, one a line, or "*" for every session."""
        if self._socket is None:
            return
        if len(names.encode()) > MAX_NAMES_BYTES:
            names = "*"
        try:
            listeners = os.listdir(self._directory)
        except OSError:
            return  # nobody listens yet
        if self._checked != self._directory and not _ours(self._directory.parent, self._directory):
            return
        self._checked = self._directory
        turns = _heard_by_turns_only(names)
        for name in listeners:
            if name.startswith(self._own):
                continue
            if not turns and name.endswith(_TURNS_ONLY):
                continue  # unnumbered: the listener sees no gap
            sequence = self._sequences.get(name, 0) + 1
            self._sequences[name] = sequence
            payload = f"{self._origin}\n{sequence}\n{names}".encode()
            try:
                self._socket.sendto(payload, str(self._directory / name))
            except BlockingIOError:
                pass  # its queue is full: it sees the gap in the numbers and reads the rows
            except (ConnectionRefusedError, FileNotFoundError):
                # The socket of a process that died without closing it (SIGKILL).
                self._sequences.pop(name, None)
                with contextlib.suppress(OSError):
                    (self._directory / name).unlink()
            except OSError:
                pass  # the listener's fallback probe sees this commit

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None


class WakeListener:
    """This process's socket: `receive` returns the datagrams that arrived, and whether some
    may have been lost."""

    def __init__(self, sock: socket.socket, path: Path) -> None:
        self._socket = sock
        self._path = path
        self._sequences: dict[str, int] = {}

    @classmethod
    def open(cls, directory: Path, origin: str, *, turns_only: bool = False) -> WakeListener | None:
        """Binds this process's socket; None where that is not possible (see the module).
        `turns_only`: hear only the commits that wake a turn key or every session."""
        sock = _datagram_socket()
        if sock is None:
            return None
        path = directory / _socket_name(origin, turns_only)
        for _ in range(3):  # another process's close may remove the directory in between
            try:
                directory.parent.mkdir(exist_ok=True, mode=0o700)
                if _ours(directory.parent):
                    directory.mkdir(exist_ok=True, mode=0o700)
                if not _ours(directory.parent, directory):
                    log.debug("%s is not this user's alone: probing the file instead", directory)
                    break
                sock.bind(str(path))
                return cls(sock, path)
            except FileNotFoundError:
                continue
            except OSError as error:
                log.debug("no wake-up socket at %s (%s): probing the file instead", path, error)
                break
        sock.close()
        return None

    def fileno(self) -> int:
        return self._socket.fileno()

    def receive(self) -> tuple[list[WakeNote], bool]:
        """Every datagram queued now, and True when one may have been lost."""
        notes: list[WakeNote] = []
        lost = False
        count = 0
        while True:
            try:
                data = self._socket.recv(_MAX_DATAGRAM_BYTES)
            except (BlockingIOError, InterruptedError):
                full = _QUEUE_LIMIT is None or count >= _QUEUE_LIMIT
                return notes, lost or (count > 0 and full)
            except OSError:
                return notes, True
            count += 1
            note, gap = self._parse(data)
            lost = lost or gap
            if note is not None:
                notes.append(note)

    def _parse(self, data: bytes) -> tuple[WakeNote | None, bool]:
        try:
            origin, sequence_text, names = data.decode().split("\n", 2)
            sequence = int(sequence_text)
        except ValueError:
            return None, True  # not ours, or cut short: read the rows
        gap = sequence != self._sequences.get(origin, 0) + 1
        if len(self._sequences) >= _MAX_SENDERS and origin not in self._sequences:
            self._sequences.clear()
        self._sequences[origin] = sequence
        sessions = None if names == "*" else frozenset(filter(None, names.split("\n")))
        return WakeNote(origin, sessions), gap

    def close(self) -> None:
        self._socket.close()
        with contextlib.suppress(OSError):
            self._path.unlink()
        with contextlib.suppress(OSError):
            self._path.parent.rmdir()  # the last one out (only an empty directory goes)
