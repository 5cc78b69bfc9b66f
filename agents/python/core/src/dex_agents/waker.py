"""Wake-ups: what makes a waiting Step (or a client's wait) look at committed state again.

A commit that can satisfy a wait writes a wake-up key for it in the same transaction; the
`Waker` of each process hears it (at once in the committing process; by LISTEN/NOTIFY on
Postgres and by a datagram or a `PRAGMA data_version` probe on SQLite in the others) and
wakes what waits on that key. Clients use it as Workers do, without the Step driver.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import store
from .db import WAKE_CHANNEL, Database
from .wake_socket import FALLBACK_POLL_SECONDS, TURN_KEY_PREFIX, WakeListener

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger("dex_agents")

# How often a SQLite process probes `PRAGMA data_version` for other processes' commits.
WAKE_POLL_SECONDS = 0.005


class Waker:
    """Wakes the Steps (and client waits) that wait on a session when a commit changes it.

    Commits in this process wake at once. Commits in other processes wake by their commit:
    on Postgres a NOTIFY sent in the committing transaction reaches a dedicated LISTEN
    connection; on SQLite a datagram that the committing process sends right after its
    commit (wake_socket.py), with a probe of `PRAGMA data_version` (which changes only when
    another connection committed) that reads the wake-up table when the file changed, once a
    second as a fallback, or every few milliseconds where no socket can be bound.
    Generations make a wake between a check and its wait impossible to miss.
    """

    def __init__(
        self,
        database: Database,
        poll_interval: float,
        *,
        prune: bool = True,
        turns_only: bool = False,
    ) -> None:
        """`turns_only` (a client's): until something waits on or listens to another key,
        hear from other SQLite processes only the commits that wake a turn key
        (`store.turn_wake_key`), so a turn's other commits cost this process nothing."""
        self._database = database
        self._poll_interval = poll_interval
        self._prune = prune
        self._turns_only = turns_only
        self._hear_everything: Callable[[], None] | None = None
        self._generation: defaultdict[str, int] = defaultdict(int)
        # Bumped by `wake_all`: every generation changes at once.
        self._epoch = 0
        self._events: dict[str, asyncio.Event] = {}
        self._listeners: list[Callable[[set[str]], None]] = []
        self._remote_listeners: list[Callable[[set[str]], None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._last_id = 0
        self._seen: set[int] = set()

    def add_listener(self, listener: Callable[[set[str]], None]) -> None:
        self._want("")
        self._listeners.append(listener)

    def add_remote_listener(self, listener: Callable[[set[str]], None]) -> None:
        """Called only for commits of other processes (this Worker never cancels its own
        Steps)."""
        self._want("")
        self._remote_listeners.append(listener)

    def _want(self, key: str) -> None:
        """Something waits on `key` (or, with "", listens to every key): a turns-only Waker
        that would not hear of it hears everything from now on."""
        if not self._turns_only or key.startswith(TURN_KEY_PREFIX):
            return
        self._turns_only = False
        if self._hear_everything is not None:
            self._hear_everything()

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def notify_threadsafe(self, sessions: set[str]) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            # A commit on the loop itself (an inline SQLite write): no self-pipe wake-up.
            loop.call_soon(self.notify, set(sessions))
        else:
            loop.call_soon_threadsafe(self.notify, set(sessions))

    def notify(self, sessions: set[str], *, remote: bool = False) -> None:
        for session_id in sessions:
            self._generation[session_id] += 1
            event = self._events.pop(session_id, None)
            if event is not None:
                event.set()
        for listener in self._listeners:
            listener(sessions)
        if remote:
            for listener in self._remote_listeners:
                listener(sessions)

    def wake_all(self) -> None:
        """Wakes every wait as if each session had changed: after the wake-up feed was down
        (a lost LISTEN connection) or a notification too large to name its sessions."""
        self._epoch += 1
        sessions = set(self._generation) | set(self._events)
        for event in self._events.values():
            event.set()
        self._events.clear()
        self.notify(sessions, remote=True)

    def generation(self, session_id: str) -> int:
        return self._generation[session_id] + self._epoch

    async def wait(self, session_id: str, generation: int, timeout: float) -> None:
        self._want(session_id)
        if self.generation(session_id) != generation:
            return
        event = self._events.setdefault(session_id, asyncio.Event())
        # asyncio.timeout, not wait_for: Python 3.11's wait_for loses a cancellation that
        # arrives as the event is set.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(timeout, 0.0)):
                await event.wait()

    async def poll_forever(self) -> None:
        """Delivers other processes' wake-ups until cancelled."""
        if self._database.sqlite:
            await self._poll_sqlite()
            return
        tasks = [asyncio.create_task(self._listen_postgres())]
        if self._prune:
            tasks.append(asyncio.create_task(self._prune_forever()))
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()

    async def _poll_sqlite(self) -> None:
        self._last_id = await self._database.read(store.last_wakeup_id)
        changes = self._database.change_counter()
        assert changes is not None
        loop = asyncio.get_running_loop()
        changed = asyncio.Event()
        # Other processes' commits arrive by datagram (wake_socket.py); the probe then only
        # catches a commit whose datagram never came, and runs seldom.
        directory = self._database.wake_directory
        origin = self._database.origin
        listener = (
            WakeListener.open(directory, origin, turns_only=self._turns_only) if directory else None
        )
        interval = self._poll_interval
        if listener is not None:
            interval = max(interval, FALLBACK_POLL_SECONDS)
            loop.add_reader(listener.fileno(), self._on_datagrams, listener, changed)

        def hear_everything() -> None:
            # The socket for every wake-up is bound before the turns-only one goes, and every
            # wait looks again: nothing sent in between is missed.
            nonlocal listener
            assert directory is not None
            old, listener = listener, WakeListener.open(directory, origin)
            if listener is not None:
                loop.add_reader(listener.fileno(), self._on_datagrams, listener, changed)
            if old is not None:
                loop.remove_reader(old.fileno())
                old.close()
            self.wake_all()

        if listener is not None and self._turns_only:
            self._hear_everything = hear_everything
        # Set from the probe's scheduling of a look until the loop takes it, so a loop that
        # does not run for a while (a SyncAgentClient between calls) gets one callback.
        scheduled = threading.Event()
        stop = threading.Event()

        def probe() -> None:
            # A thread, not the event loop: a probe costs microseconds, a loop wake-up more.
            seen = None
            while not stop.wait(interval):
                try:
                    version = changes()
                except Exception:
                    version = None  # a locked or busy file: the next probe tells
                if version is None or version == seen:
                    continue  # idle: nobody committed since the last look
                seen = version
                if scheduled.is_set():
                    continue  # a look is already due: it will read this commit's rows too
                scheduled.set()
                try:
                    loop.call_soon_threadsafe(changed.set)
                except RuntimeError:
                    return  # the loop closed

        thread = threading.Thread(target=probe, name="dex-wake-probe", daemon=True)
        thread.start()
        # Commits made before the probe took its first look woke nobody: look again.
        self.wake_all()
        pruned_at = time.monotonic()
        try:
            while True:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(60):
                        await changed.wait()
                changed.clear()
                scheduled.clear()
                try:
                    await self._poll_once()
                    if self._prune and time.monotonic() - pruned_at > 60:
                        await self._database.write(lambda conn: store.prune_wakeups(conn, 300))
                        pruned_at = time.monotonic()
                except Exception:
                    log.exception("polling for wake-ups failed; trying again")
        finally:
            stop.set()
            self._hear_everything = None
            if listener is not None:
                loop.remove_reader(listener.fileno())
                listener.close()

    def _on_datagrams(self, listener: WakeListener, changed: asyncio.Event) -> None:
        notes, lost = listener.receive()
        sessions: set[str] = set()
        for note in notes:
            if note.sessions is None:
                self.wake_all()
            else:
                sessions |= note.sessions
        if sessions:
            self.notify(sessions, remote=True)
        if lost:
            changed.set()  # read the wake-up rows: a datagram may have been dropped

    async def _listen_postgres(self) -> None:
        import psycopg

        delay = 0.05
        failing = False
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self._database.libpq_url(),
                    autocommit=True,
                    keepalives=1,
                    keepalives_idle=10,
                    keepalives_interval=5,
                    keepalives_count=3,
                ) as conn:
                    await conn.execute(f"LISTEN {WAKE_CHANNEL}")
                    if failing:
                        log.warning("listening for wake-ups again")
                    failing, delay = False, 0.05
                    # Commits made before LISTEN took effect notified nobody: look again.
                    self.wake_all()
                    await self._receive_notifications(conn)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                if not failing:
                    log.warning("listening for wake-ups failed (%s); reconnecting", error)
                    failing = True
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)

    async def _receive_notifications(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Delivers the connection's notifications as its socket receives them, until the
        connection fails. Not `conn.notifies()`: it wakes the event loop ten times a second
        to look for an interrupt (psycopg's wait interval), which an idle Worker paid for."""
        loop = asyncio.get_running_loop()
        pgconn = conn.pgconn
        encoding = conn.info.encoding
        lost: asyncio.Future[None] = loop.create_future()

        def readable() -> None:
            try:
                pgconn.consume_input()
                while (note := pgconn.notifies()) is not None:
                    self._on_notification(note.extra.decode(encoding))
            except Exception as error:  # the connection broke
                if not lost.done():
                    lost.set_exception(error)

        socket = pgconn.socket
        loop.add_reader(socket, readable)
        try:
            readable()  # what arrived with the LISTEN's answer
            await lost
        finally:
            loop.remove_reader(socket)

    def _on_notification(self, payload: str) -> None:
        origin, _, names = payload.partition("\n")
        if origin == self._database.origin:
            return  # delivered at commit, in this process
        if names == "*":
            self.wake_all()
        elif names:
            self.notify(set(names.split("\n")), remote=True)

    async def _prune_forever(self) -> None:
        while True:
            await asyncio.sleep(60)
            try:
                await self._database.write(lambda conn: store.prune_wakeups(conn, 300))
            except Exception:
                log.exception("pruning wake-ups failed; trying again")

    async def _poll_once(self) -> None:
        # On Postgres, IDs can commit out of order: look a little behind the newest ID seen.
        # SQLite has one writer at a time, so its IDs commit in order.
        floor = self._last_id if self._database.sqlite else max(self._last_id - 256, 0)
        origin = self._database.origin
        rows = await self._database.read(lambda conn: store.wakeups_after(conn, floor, origin))
        fresh = [(i, s) for i, s in rows if i not in self._seen]
        if not fresh:
            return
        self._seen.update(i for i, _ in fresh)
        self._last_id = max(self._last_id, max(i for i, _ in fresh))
        self._seen = {i for i in self._seen if i > self._last_id - 512}
        sessions = {s for _, s in fresh if s}
        if sessions:
            self.notify(sessions, remote=True)
