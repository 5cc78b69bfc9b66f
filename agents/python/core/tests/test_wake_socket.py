"""Wake-ups across processes. Of one SQLite file: datagrams, the gap check that reads the
wake-up rows after a dropped datagram, stale sockets, and the fallback probe for a commit that
no datagram announced. Two `Database`s on one file stand for two processes (each has its own
origin and socket); a datagram that is not sent or dropped is caught only by the rows. On
Postgres: the LISTEN connection, and its reconnection when the server cuts it."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from dex_agents import db, store, wake_socket
from dex_agents import waker as waker_module
from dex_agents.db import Database
from dex_agents.testing.fixtures import POSTGRES_URL, fresh_postgres_database
from dex_agents.types import AgentSessionStartInput
from dex_agents.wake_socket import WakeListener, WakeSender
from dex_agents.waker import Waker


def test_a_sender_reaches_every_other_listener_of_the_file(tmp_path: Path) -> None:
    directory = tmp_path / "wake"
    first = WakeListener.open(directory, "a" * 32)
    second = WakeListener.open(directory, "b" * 32)
    assert first is not None and second is not None
    sender = WakeSender(directory, "a" * 32)  # the first listener's own process
    sender.send("s1\ns2")
    sender.send("*")
    notes, lost = second.receive()
    assert [n.sessions for n in notes] == [frozenset({"s1", "s2"}), None]
    assert lost is (wake_socket._QUEUE_LIMIT is None)  # elsewhere every drain reads the rows
    assert first.receive() == ([], False)  # a process never wakes itself by datagram
    for closing in (first, second, sender):
        closing.close()
    assert not directory.exists()  # the last listener out removes it


def test_a_turns_only_listener_hears_only_turn_keys_and_everything(tmp_path: Path) -> None:
    directory = tmp_path / "wake"
    turns = WakeListener.open(directory, "t" * 32, turns_only=True)
    every = WakeListener.open(directory, "e" * 32)
    assert turns is not None and every is not None
    sender = WakeSender(directory, "s" * 32)
    turn_key = store.turn_wake_key("s1")
    for names in ("s1", f"s1\n{turn_key}", "s2", "*"):
        sender.send(names)
    notes, lost = turns.receive()
    assert [n.sessions for n in notes] == [frozenset({"s1", turn_key}), None]
    assert not lost or wake_socket._QUEUE_LIMIT is None  # skipped sends leave no gap
    notes, _ = every.receive()
    assert len(notes) == 4
    # A process's own turns-only socket is its own too: never woken by its own commits.
    own = WakeSender(directory, "t" * 32)
    own.send(turn_key)
    assert turns.receive() == ([], False)
    for closing in (turns, every, sender, own):
        closing.close()


@pytest.mark.skipif(wake_socket._QUEUE_LIMIT is None, reason="Linux's datagram queue limit")
def test_a_datagram_dropped_by_a_full_queue_is_noticed(tmp_path: Path) -> None:
    directory = tmp_path / "wake"
    listener = WakeListener.open(directory, "l" * 32)
    assert listener is not None
    sender = WakeSender(directory, "s" * 32)
    for i in range(200):  # more than any listener queue holds (Linux: 10 datagrams)
        sender.send(f"session-{i}")
    notes, lost = listener.receive()
    assert lost and len(notes) < 200  # the drain itself tells: it met a full queue
    sender.send("after")  # its number shows the gap too: one more read, to be safe
    notes, lost = listener.receive()
    assert [n.sessions for n in notes] == [frozenset({"after"})] and lost
    sender.send("again")
    notes, lost = listener.receive()
    assert [n.sessions for n in notes] == [frozenset({"again"})] and not lost
    listener.close()
    sender.close()


def test_the_socket_of_a_killed_process_is_removed_by_the_next_sender(tmp_path: Path) -> None:
    directory = tmp_path / "wake"
    directory.mkdir()
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    dead.bind(str(directory / "deadbeefdeadbeef"))
    dead.close()  # the file stays, as after SIGKILL
    sender = WakeSender(directory, "s" * 32)
    sender.send("s1")
    assert list(directory.iterdir()) == []
    sender.close()


async def _woken(waker: Waker, sessions: list[str], before: dict[str, int]) -> set[str]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        woken = {s for s in sessions if waker.generation(s) != before[s]}
        if woken == set(sessions):
            return woken
        await asyncio.sleep(0.01)
    return {s for s in sessions if waker.generation(s) != before[s]}


@contextlib.asynccontextmanager
async def _feeding(waker: Waker) -> AsyncIterator[None]:
    """The waker's wake-up feed running, as in a waiting process, once it had a moment to
    bind its socket."""
    waker.bind(asyncio.get_running_loop())
    feed = asyncio.create_task(waker.poll_forever())
    try:
        await asyncio.sleep(0.2)
        yield
    finally:
        feed.cancel()
        await asyncio.gather(feed, return_exceptions=True)


@pytest.fixture
def two_processes(tmp_path: Path) -> Iterator[tuple[Database, Database]]:
    """A waiting and a committing process of one SQLite file (two Databases)."""
    url = f"sqlite:///{tmp_path / 'wake.sqlite'}"
    waiting, committing = Database(url), Database(url)
    waiting.create_schema()
    yield waiting, committing
    waiting.close()
    committing.close()


def _wake(*sessions: str) -> Callable[..., None]:
    def write(conn: object) -> None:
        for session_id in sessions:
            store.wake(conn, session_id)  # type: ignore[arg-type]

    return write


async def test_another_process_commit_wakes_by_datagram_without_the_probe(
    monkeypatch: pytest.MonkeyPatch, two_processes: tuple[Database, Database]
) -> None:
    monkeypatch.setattr(waker_module, "FALLBACK_POLL_SECONDS", 3600.0)
    waiting, committing = two_processes
    waker = Waker(waiting, 3600.0, prune=False)  # no probe: only datagrams and the rows
    async with _feeding(waker):
        before = {"s1": waker.generation("s1")}
        await committing.write(_wake("s1"))
        assert await _woken(waker, ["s1"], before) == {"s1"}

        # A burst while the waiting process's loop is busy overflows its queue: the gap
        # makes it read the rows, so every session still wakes.
        sessions = [f"burst-{i}" for i in range(40)]
        before = {s: waker.generation(s) for s in sessions}
        for session_id in sessions:
            committing.write_sync(_wake(session_id))  # the loop does not run meanwhile
        assert await _woken(waker, sessions, before) == set(sessions)


async def test_a_turns_only_waker_hears_everything_once_something_else_waits(
    monkeypatch: pytest.MonkeyPatch, two_processes: tuple[Database, Database]
) -> None:
    monkeypatch.setattr(waker_module, "FALLBACK_POLL_SECONDS", 3600.0)
    waiting, committing = two_processes
    waker = Waker(waiting, 3600.0, prune=False, turns_only=True)  # a client's
    turn_key = store.turn_wake_key("s1")
    async with _feeding(waker):
        assert waiting.wake_directory is not None
        (name,) = [p.name for p in waiting.wake_directory.iterdir()]
        assert name.endswith("-turns")
        before = {"s1": waker.generation("s1"), turn_key: waker.generation(turn_key)}
        await committing.write(_wake("s1"))
        await committing.write(_wake("s1", turn_key))
        assert await _woken(waker, [turn_key], before) == {turn_key}
        assert waker.generation("s1") == before["s1"] + 1  # only with the turn key's commit

        # A wait on the session itself: from now on every commit reaches this process.
        generation = waker.generation("s1")
        await waker.wait("s1", generation, 5.0)  # the switch wakes every wait once
        (name,) = [p.name for p in waiting.wake_directory.iterdir()]
        assert not name.endswith("-turns")
        generation = waker.generation("s1")
        waited = asyncio.create_task(waker.wait("s1", generation, 10.0))
        await asyncio.sleep(0.05)
        await committing.write(_wake("s1"))
        await asyncio.wait_for(waited, 5.0)
        assert waker.generation("s1") != generation


async def test_a_commit_no_datagram_announced_wakes_through_the_fallback_probe(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(waker_module, "FALLBACK_POLL_SECONDS", 0.05)
    path = tmp_path / "wake.sqlite"
    waiting = Database(f"sqlite:///{path}")
    waiting.create_schema()
    waker = Waker(waiting, waker_module.WAKE_POLL_SECONDS, prune=False)
    try:
        async with _feeding(waker):
            before = {"s1": waker.generation("s1")}
            # A process that committed and died before its send (or a release without sockets).
            with sqlite3.connect(path) as conn:
                conn.execute(
                    "insert into dex_wakeups (session_id, created, origin) values (?, ?, ?)",
                    ("s1", time.time(), "f" * 32),
                )
            assert await _woken(waker, ["s1"], before) == {"s1"}
    finally:
        waiting.close()


def test_wake_directories_differ_per_file_and_fit_a_socket_path(tmp_path: Path) -> None:
    first = wake_socket.wake_directory(str(tmp_path / "a.sqlite"))
    second = wake_socket.wake_directory(str(tmp_path / "deep" / ("x" * 200) / "b.sqlite"))
    assert first != second
    assert len(str(second / ("0" * 16)).encode()) < 104  # the shortest limit (macOS)


def test_no_socket_in_a_directory_others_may_write_to(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # as if another user had made it first, writable by all
    directory = shared / "wake"
    assert WakeListener.open(directory, "l" * 32) is None

    directory.mkdir()
    eavesdropper = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    eavesdropper.bind(str(directory / "eavesdropper0000"))
    eavesdropper.setblocking(False)
    sender = WakeSender(directory, "s" * 32)
    sender.send("secret-session")
    with pytest.raises(BlockingIOError):
        eavesdropper.recv(2048)  # nothing was sent into it
    eavesdropper.close()
    sender.close()


def test_only_outcome_and_interrupt_events_wake_a_waiting_turn(tmp_path: Path) -> None:
    """A client waiting for a turn is woken by the commits that write its outcome or an
    interrupt, not by every commit of the turn."""
    turn_key = store.turn_wake_key("s1")
    engine = db.create_engine(f"sqlite:///{tmp_path / 'wake.sqlite'}")
    db.metadata.create_all(engine)

    def woken(event_type: str) -> set[str]:
        with engine.begin() as conn:
            session = store.read_session(conn, "s1")
            record = store.EventRecord(event_type, "turn-1", 1, {}, "RunModel-1")
            store.write_events(conn, session, [record])
            store.save_session(conn, session)
            return set(conn.info.pop("dex_woken"))

    with engine.begin() as conn:
        store.create_session(conn, "s1", "Flow", AgentSessionStartInput())
    assert woken("text_delta") == {"s1"}
    assert woken("tool_call_completed") == {"s1"}
    for event_type in store.TURN_OUTCOME_EVENTS:
        assert woken(event_type) == {"s1", turn_key}
    assert turn_key != "s1" and len(store.turn_wake_key("x" * 255)) == 255


@pytest.mark.skipif(POSTGRES_URL is None, reason="needs DEX_AGENTS_TEST_POSTGRES_URL")
async def test_a_postgres_listener_cut_by_the_server_listens_again_and_hears_commits(
    request: pytest.FixtureRequest,
) -> None:
    databases = fresh_postgres_database(request.node.name)
    url = next(databases)
    waiting, committing = Database(url), Database(url)
    waiting.create_schema()
    waker = Waker(waiting, 3600.0, prune=False)
    try:
        async with _feeding(waker):
            first = await _listener_pid(committing)
            before = {"s1": waker.generation("s1")}
            await committing.write(_wake("s1"))
            assert await _woken(waker, ["s1"], before) == {"s1"}

            await committing.write(
                lambda conn: conn.execute(sa.text(f"SELECT pg_terminate_backend({first})"))
            )
            second = await _listener_pid(committing, other_than=first)
            await asyncio.sleep(0.3)  # past the look at everything that follows its LISTEN
            before = {"s2": waker.generation("s2")}
            await committing.write(_wake("s2"))
            assert await _woken(waker, ["s2"], before) == {"s2"}
            assert second != first
    finally:
        waiting.close()
        committing.close()
        databases.close()


async def _listener_pid(database: Database, other_than: int | None = None) -> int:
    """The server process of the waker's LISTEN connection, once it listens."""
    query = sa.text(
        "SELECT pid FROM pg_stat_activity WHERE query LIKE 'LISTEN %' AND datname = "
        "current_database() AND pid <> :other"
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        pid = await database.read(
            lambda conn: conn.execute(query, {"other": other_than or 0}).scalar()
        )
        if pid is not None:
            return int(pid)
        await asyncio.sleep(0.05)
    raise AssertionError("the waker did not listen")
