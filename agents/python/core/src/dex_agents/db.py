"""The database: one SQLite file by default, Postgres through the same code.

Session tables live beside DBOS's system tables (the same SQLite file, or the same Postgres
database with DBOS in schema `dbos`), so a Step's outcome and the start of the next Steps can
share one transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import os
import re
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, OperationalError

from . import fastsql, schema
from .errors import DatabaseUnavailableError
from .logs import redacted_url
from .wake_socket import WakeSender, wake_directory

if TYPE_CHECKING:
    from .parking import StepEnqueuer

log = logging.getLogger("dex_agents")

DEFAULT_DATABASE_URL = "sqlite:///dex_agents.sqlite"
DATABASE_URL_ENV = "DEX_AGENTS_DATABASE_URL"

T = TypeVar("T")

metadata = sa.MetaData()

# A stored text that starts with this marker holds json.dumps of the real value (ASCII only).
LOSSLESS_MARKER = "\ufdd0dex-json:"
# What neither database stores as text: NUL (Postgres), unpaired surrogates (not UTF-8).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


class LosslessText(sa.types.TypeDecorator[str]):
    """Text stored byte-for-byte on SQLite and Postgres: a value either database would refuse
    (or one that starts with the marker) is stored as the marker plus its ASCII JSON string
    and decoded on read. Every other value is stored as it is."""

    impl = sa.Text
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: sa.Dialect) -> str | None:
        if value is None or not (value.startswith(LOSSLESS_MARKER) or _UNSTORABLE.search(value)):
            return value
        return LOSSLESS_MARKER + json.dumps(value)

    def process_result_value(self, value: str | None, dialect: sa.Dialect) -> str | None:
        if value is None or not value.startswith(LOSSLESS_MARKER):
            return value
        decoded: str = json.loads(value[len(LOSSLESS_MARKER) :])
        return decoded


# The predicates of the metrics' partial indexes (schema.py's migration 5 creates them).
ACTIVE_STEPS = "status IN ('running', 'waiting')"
WAITING_FOR_PERSON = "pending_interrupts IS NOT NULL AND pending_interrupts <> '[]'"

sessions = sa.Table(
    "dex_sessions",
    metadata,
    sa.Column("session_id", sa.String(255), primary_key=True),
    sa.Column("flow_type", sa.String(255), nullable=False),
    sa.Column("created_at", sa.String(32), nullable=False),
    sa.Column("updated_at", sa.String(32), nullable=False),
    sa.Column("start_input", LosslessText(), nullable=False),
    sa.Column("state", LosslessText()),
    sa.Column("usage", LosslessText()),
    sa.Column("pending_interrupts", LosslessText()),
    sa.Column("framework_run_state", LosslessText()),
    sa.Column("turn_cancellation", LosslessText()),
    sa.Column("session_settings", LosslessText()),
    sa.Column("turn_session_settings", LosslessText()),
    sa.Column("turn_reply_sequence", LosslessText()),
    sa.Column("plan", LosslessText()),
    sa.Column("pending_plan_execution", LosslessText()),
    sa.Column("context_summary", LosslessText()),
    # What RPCs must know of the Flow (plan mode), written by the Worker at each turn start.
    sa.Column("features", LosslessText()),
    sa.Column("step_counter", sa.Integer, nullable=False, default=0),
    sa.Column("event_counter", sa.Integer, nullable=False, default=0),
    # AgentTraceContext, written only while tracing is on (dex_agents.otel).
    sa.Column("trace_context", sa.Text),
    # The bounded event log (store.trim_events): the bytes of the session's kept events, the
    # offset through which the oldest were trimmed (0: none), and the Flow's capacity.
    sa.Column("event_bytes", sa.BigInteger, nullable=False, default=0, server_default="0"),
    sa.Column("events_trimmed", sa.Integer, nullable=False, default=0, server_default="0"),
    sa.Column("event_capacity", sa.BigInteger),
    # Only the sessions with a pending approval or question: the metrics' sessions waiting
    # for a person (metrics.py).
    sa.Index(
        "dex_sessions_waiting_for_person",
        "flow_type",
        sqlite_where=sa.text(WAITING_FOR_PERSON),
        postgresql_where=sa.text(WAITING_FOR_PERSON),
    ),
)

messages = sa.Table(
    "dex_messages",
    metadata,
    sa.Column("session_id", sa.String(255), primary_key=True),
    sa.Column("sequence", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("turn_id", sa.String(64), nullable=False),
    sa.Column("role", sa.String(16), nullable=False),
    sa.Column("text", LosslessText()),
    sa.Column("tool_call_id", sa.String(255)),
    sa.Column("tool_name", sa.String(255)),
    sa.Column("tool_arguments", LosslessText()),
    sa.Column("tool_output", LosslessText()),
    sa.Column("framework_item", LosslessText(), nullable=False),
    sa.Column("created_at", sa.String(32), nullable=False),
)

tool_calls = sa.Table(
    "dex_tool_calls",
    metadata,
    sa.Column("session_id", sa.String(255), primary_key=True),
    sa.Column("tool_call_id", sa.String(255), primary_key=True),
    sa.Column("turn_id", sa.String(64), nullable=False),
    sa.Column("deferral_order", sa.Integer, nullable=False),
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("record", LosslessText(), nullable=False),
)

# Channels: a message is a row; consuming it deletes the row.
channel_messages = sa.Table(
    "dex_channel_messages",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("session_id", sa.String(255), nullable=False),
    sa.Column("channel", sa.String(64), nullable=False),
    sa.Column("key", sa.String(255), nullable=False, default=""),
    sa.Column("payload", LosslessText(), nullable=False),
    sa.Column("created_at", sa.String(32), nullable=False),
    sa.Index("dex_channel_messages_by_key", "session_id", "channel", "key", "id"),
)

events = sa.Table(
    "dex_events",
    metadata,
    sa.Column("session_id", sa.String(255), primary_key=True),
    sa.Column("offset", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("type", sa.String(128), nullable=False),
    sa.Column("turn_id", sa.String(64)),
    sa.Column("attempt", sa.Integer, nullable=False),
    sa.Column("payload", LosslessText(), nullable=False),
    sa.Column("step_execution_id", sa.String(128), nullable=False),
    sa.Column("created_at", sa.String(32), nullable=False),
    # What the event counts against its session's capacity (store.event_size).
    sa.Column("size", sa.Integer, nullable=False, default=0, server_default="0"),
)

steps = sa.Table(
    "dex_steps",
    metadata,
    sa.Column("session_id", sa.String(255), primary_key=True),
    sa.Column("step_execution_id", sa.String(128), primary_key=True),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("step_type", sa.String(64), nullable=False),
    sa.Column("input", LosslessText(), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False, default=0),
    # Set once an attempt got past its point of no return (for a tool: tool_call_started).
    sa.Column("progress_started", sa.Boolean, nullable=False, default=False),
    sa.Column("checkpoint", LosslessText()),
    sa.Column("error", LosslessText()),
    sa.Column("next_steps", LosslessText(), nullable=False, default="[]"),
    sa.Column("scheduled_at", sa.String(32), nullable=False),
    sa.Column("started_at", sa.String(32)),
    sa.Column("ended_at", sa.String(32)),
    # Parked Steps (see parking.py): how often the Step was woken from parked, which names
    # the workflow of each wake, and when a parked Step is due (epoch seconds) if ever.
    sa.Column("wakes", sa.Integer, nullable=False, default=0, server_default="0"),
    sa.Column("due_at", sa.Float),
    # A failure route's recovery (stepkit.Recovery as JSON): why the Step that routed to it
    # failed. Null on every other Step.
    sa.Column("recovery", LosslessText()),
    sa.Index("dex_steps_by_seq", "session_id", "seq"),
    # Only parked rows: a commit that wakes a session finds its parked Steps, and a Worker
    # finds the due ones, without reading the Steps that run or ended.
    sa.Index(
        "dex_steps_parked",
        "session_id",
        sqlite_where=sa.text("status = 'parked'"),
        postgresql_where=sa.text("status = 'parked'"),
    ),
    sa.Index(
        "dex_steps_parked_due",
        "due_at",
        sqlite_where=sa.text("status = 'parked' AND due_at IS NOT NULL"),
        postgresql_where=sa.text("status = 'parked' AND due_at IS NOT NULL"),
    ),
    # Only the Steps that run or wait hot: the metrics' sessions by state (metrics.py).
    sa.Index(
        "dex_steps_active",
        "status",
        "session_id",
        sqlite_where=sa.text(ACTIVE_STEPS),
        postgresql_where=sa.text(ACTIVE_STEPS),
    ),
)

# The longest wake-up key: a session ID, or a key made by `store.control_wake_key`.
WAKE_KEY_CHARS = 255
# Cross-process wake-ups: a writer inserts the session ID; Workers poll for new rows.
wakeups = sa.Table(
    "dex_wakeups",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("session_id", sa.String(WAKE_KEY_CHARS), nullable=False),
    sa.Column("created", sa.Float, nullable=False),
    # The writing process's Database, so a Worker skips the wake-ups it already delivered.
    sa.Column("origin", sa.String(32), nullable=False, default=""),
)


# Worker liveness: each Worker bumps its beat counter; the others watch the counter move.
workers = sa.Table(
    "dex_workers",
    metadata,
    sa.Column("worker_id", sa.String(255), primary_key=True),
    sa.Column("beats", sa.Integer, nullable=False),
    # running, or stopped: a Worker that stopped cleanly hands its Steps over at once.
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("flow_types", LosslessText(), nullable=False),
    sa.Column("lease_seconds", sa.Float, nullable=False),
    sa.Column("host", sa.String(255), nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("started_at", sa.String(32), nullable=False),
    sa.Column("heartbeat_at", sa.String(32), nullable=False),
)


def database_url(explicit: str | None = None) -> str:
    return explicit or os.environ.get(DATABASE_URL_ENV) or DEFAULT_DATABASE_URL


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def resolve_database_url(explicit: str | None) -> str:
    """The URL to open: `explicit`, else the environment's, else the default; a relative
    SQLite path made absolute (the working directory's: DBOS and SQLAlchemy agree on it only
    when it is absolute), a Postgres one on psycopg 3."""
    url = database_url(explicit)
    if url.startswith("sqlite:///") and not url.startswith("sqlite:////"):
        url = "sqlite:///" + str(Path(url.removeprefix("sqlite:///")).resolve())
    return normalize_url(url)


def normalize_url(url: str) -> str:
    """Postgres URLs use psycopg 3, which DBOS already brings."""
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def create_engine(url: str, *, pool_size: int = 10, busy_timeout_ms: int = 30_000) -> Engine:
    url = normalize_url(url)
    if is_sqlite(url):
        engine = sa.create_engine(url, pool_size=pool_size, max_overflow=20, pool_timeout=60)
        _configure_sqlite(engine, busy_timeout_ms)
        return engine
    # No ping per checkout: the Database's retries cover a connection a server restart left
    # stale (docs/design/engine.md, "Failures of the driver and of the database").
    return sa.create_engine(url, pool_size=pool_size, max_overflow=20, pool_pre_ping=False)


def _configure_sqlite(engine: Engine, busy_timeout_ms: int) -> None:
    """WAL with synchronous=NORMAL: a committed Step survives a process crash (SIGKILL); the
    last commits before an operating-system crash or power loss may be lost. Writers take the
    lock at BEGIN (IMMEDIATE), so a read-then-write transaction never upgrades and deadlocks."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        _enter_wal(dbapi_connection)
        dbapi_connection.execute("PRAGMA synchronous=NORMAL")
        dbapi_connection.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        readonly = connection.get_execution_options().get("dex_readonly", False)
        fastsql.driver_sql(connection, "BEGIN" if readonly else "BEGIN IMMEDIATE")


_WAL_SWITCH_SECONDS = 30.0


def _enter_wal(dbapi_connection: sqlite3.Connection) -> None:
    """Puts the database in WAL mode, or finds it there. While another connection switches a
    new file to WAL, SQLite answers "database is locked" at once, without calling the busy
    handler, so processes opening a fresh database together try again here for a while."""
    deadline = time.monotonic() + _WAL_SWITCH_SECONDS
    delay = 0.001
    while True:
        try:
            dbapi_connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def create_dbos_engine(url: str) -> Engine:
    """The engine DBOS uses for its system tables: DBOS's own SQLite settings plus WAL."""
    url = normalize_url(url)
    if not is_sqlite(url):
        return sa.create_engine(url, pool_size=10, max_overflow=20, pool_pre_ping=True)
    engine = sa.create_engine(url, pool_size=10, max_overflow=20, pool_timeout=60)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = "IMMEDIATE"
        _enter_wal(dbapi_connection)
        dbapi_connection.execute("PRAGMA synchronous=NORMAL")
        dbapi_connection.execute("PRAGMA busy_timeout=30000")
        dbapi_connection.execute("PRAGMA foreign_keys=ON")

    return engine


# The Postgres NOTIFY channel of wake-ups. A payload is the committing process's origin, then
# the woken session IDs, one a line ("*" when they would not fit: wake every wait).
WAKE_CHANNEL = "dex_wakeups"
# conn.info key: callables a transaction leaves to run once it committed (`after_commit`).
AFTER_COMMIT = "dex_after_commit"


def after_commit(conn: Connection, callback: Callable[[], None]) -> None:
    """Runs `callback` once this write transaction committed; never when it rolled back (a
    transaction retried after an outage runs its body again, and so registers again)."""
    conn.info.setdefault(AFTER_COMMIT, []).append(callback)


_NOTIFY_MAX_BYTES = 7000
_NOTIFY = sa.text("SELECT pg_notify(:channel, :payload)")
_INSERT_WAKEUP = wakeups.insert()


def wake_names(sessions: set[str]) -> str:
    """The woken session IDs, one a line, or "*" (every session) when they would not fit in
    one notification."""
    names = "\n".join(sorted(sessions))
    return "*" if len(names.encode()) > _NOTIFY_MAX_BYTES else names


def wake_payload(origin: str, sessions: set[str]) -> str:
    return f"{origin}\n{wake_names(sessions)}"


# The longest pause between two tries of a transaction while the database is unavailable, so
# that every waiting Step goes on within about this long of the database's return.
MAX_RETRY_DELAY = 2.0


class _NotRun:
    """A transaction that did not run (see `Database._try_write_inline`)."""


NOT_RUN = _NotRun()


class Database:
    """Runs short transactions on a small thread pool, so the event loop never waits for I/O.
    On SQLite a read, and a write that can take the file's write lock at once, run on the
    event loop itself: each takes a fraction of a millisecond, less than the hop to a thread.

    A transaction that fails because the database is unreachable or locked is retried with
    capped backoff: for as long as the outage lasts when `retry_seconds` is None (a Worker:
    a Step waits for the database instead of failing), or up to `retry_seconds` (a client,
    whose caller gets `DatabaseUnavailableError`). An outage is logged once when it begins and
    once when it ends.
    """

    def __init__(self, url: str, *, retry_seconds: float | None = None) -> None:
        self.url = normalize_url(url)
        self.engine = create_engine(self.url)
        self.sqlite = is_sqlite(self.url)
        self.retry_seconds = retry_seconds
        self.outage = Outage(redacted_url(self.url))
        # Reads and writes run on separate threads, so reads never queue behind writers that
        # wait for the database's write lock.
        self._readers = ThreadPoolExecutor(max_workers=8, thread_name_prefix="dex-db-read")
        self._writers = ThreadPoolExecutor(
            max_workers=1 if self.sqlite else 8, thread_name_prefix="dex-db-write"
        )
        # SQLite has one writer at a time; writers of this process queue on a lock instead
        # of meeting in SQLite's busy handler, whose sleeps grow to 100 ms under contention.
        self._sqlite_writer = threading.Lock()
        self._write_lock = self._sqlite_writer if self.sqlite else contextlib.nullcontext()
        # SQLite writes are first tried on the event loop, on a connection that never waits
        # for the file's write lock (see `write`).
        self._inline_engine = (
            create_engine(self.url, pool_size=1, busy_timeout_ms=0) if self.sqlite else None
        )
        # Called with the sessions a committed transaction woke (from a pool thread).
        self.on_wake: Callable[[set[str]], None] | None = None
        # Called after a commit that woke parked Steps, with their flow types (a Worker
        # claims their wakes at once when it hosts one).
        self.on_parked_wake: Callable[[set[str]], None] | None = None
        self._enqueuer: StepEnqueuer | None = None
        self.origin = uuid.uuid4().hex
        # SQLite: the other processes of the file hear of this process's commits by datagram.
        path = self._sqlite_path() if self.sqlite else ""
        self.wake_directory = wake_directory(path) if path not in ("", ":memory:") else None
        self._wake_sender = (
            WakeSender(self.wake_directory, self.origin) if self.wake_directory else None
        )

    def _sqlite_path(self) -> str:
        return sa.engine.make_url(self.url).database or ""

    def change_counter(self) -> Callable[[], int] | None:
        """A cheap probe that changes whenever another connection commits to this SQLite file
        (PRAGMA data_version on a dedicated connection), so an idle poller can skip its query.
        None for Postgres."""
        if not self.sqlite:
            return None
        probe = sqlite3.connect(self._sqlite_path(), check_same_thread=False, isolation_level=None)

        def data_version() -> int:
            value: int = probe.execute("PRAGMA data_version").fetchone()[0]
            return value

        return data_version

    def libpq_url(self) -> str:
        """The URL for a plain psycopg connection (the LISTEN connection)."""
        url = sa.engine.make_url(self.url).set(drivername="postgresql")
        return url.render_as_string(hide_password=False)

    def create_schema(self) -> None:
        """Creates the tables, or migrates them to this version (see `schema`); raises
        `SchemaTooNewError` for a database migrated by a newer dex-agents."""
        self._retrying(lambda: schema.migrate(self.engine))

    def write_sync(self, fn: Callable[[Connection], T]) -> T:
        def run() -> T:
            with self._write_lock:
                return self._write_once(self.engine, fn)

        return self._retrying(run)

    def _write_once(self, engine: Engine, fn: Callable[[Connection], T]) -> T:
        with engine.begin() as conn:
            conn.info.pop("dex_woken", None)
            conn.info.pop(AFTER_COMMIT, None)
            conn.info["dex_origin"] = self.origin
            result = fn(conn)
            after_commit: list[Callable[[], None]] = conn.info.pop(AFTER_COMMIT, [])
            woken: set[str] = conn.info.pop("dex_woken", set())
            parked_flow_types = self._wake_parked(conn, woken) if woken else None
            if parked_flow_types:
                woken |= conn.info.pop("dex_woken", set())
            if woken:
                now = time.time()
                rows = [{"session_id": s, "created": now, "origin": self.origin} for s in woken]
                fastsql.execute_many(conn, _INSERT_WAKEUP, rows)
            if woken and not self.sqlite:
                # Delivered to listeners when (and only if) this transaction commits.
                payload = wake_payload(self.origin, woken)
                conn.execute(_NOTIFY, {"channel": WAKE_CHANNEL, "payload": payload})
        if woken and self._wake_sender is not None:
            self._wake_sender.send(wake_names(woken))
        if woken and self.on_wake is not None:
            self.on_wake(woken)
        if parked_flow_types and self.on_parked_wake is not None:
            self.on_parked_wake(parked_flow_types)
        for callback in after_commit:
            callback()
        return result

    def _wake_parked(self, conn: Connection, woken: set[str]) -> set[str]:
        """Every commit that wakes a session also wakes its parked Steps, in the same
        transaction (see parking.py); returns their flow types."""
        from .parking import wake_parked

        return wake_parked(conn, woken, self.enqueuer)

    @property
    def enqueuer(self) -> StepEnqueuer:
        """Enqueues Step workflows in this database's transactions."""
        if self._enqueuer is None:
            from .parking import StepEnqueuer

            self._enqueuer = StepEnqueuer(self.url)
        return self._enqueuer

    def _try_write_inline(self, fn: Callable[[Connection], T]) -> T | _NotRun:
        """A SQLite write on the caller's thread (the event loop) when it can commit at once:
        no other writer of this process holds the lock and no other process holds the file's
        write lock. A Step transaction takes well under a millisecond, and the hop to a pool
        thread and back costs more CPU than the transaction (the loop's self-pipe wake-up,
        the thread switch). NOT_RUN when it could not begin (it then rolled back whole)."""
        assert self._inline_engine is not None
        if not self._sqlite_writer.acquire(blocking=False):
            return NOT_RUN
        try:
            return self._write_once(self._inline_engine, fn)
        except DBAPIError as error:
            if not self._is_transient(error):
                raise
            return NOT_RUN
        finally:
            self._sqlite_writer.release()

    def read_sync(self, fn: Callable[[Connection], T]) -> T:
        return self._retrying(lambda: self._read_once(fn))

    async def write(self, fn: Callable[[Connection], T]) -> T:
        if self._inline_engine is not None:
            result = self._try_write_inline(fn)
            if not isinstance(result, _NotRun):
                return result
        loop = asyncio.get_running_loop()
        # With the caller's context: a log line of the transaction names its Step (logs.py).
        run = contextvars.copy_context().run
        return await loop.run_in_executor(self._writers, run, self.write_sync, fn)

    async def read(self, fn: Callable[[Connection], T]) -> T:
        if self.sqlite:
            # A SQLite read in WAL mode never waits for a writer and takes some 0.1 ms: run on
            # the event loop it costs a third of what a hop to a pool thread and back does.
            # Only if it fails (the file is unavailable) does the read go to a thread, whose
            # retries may wait for as long as the outage lasts.
            try:
                return self._read_once(fn)
            except DBAPIError as error:
                if not self._is_transient(error):
                    raise
        loop = asyncio.get_running_loop()
        run = contextvars.copy_context().run
        return await loop.run_in_executor(self._readers, run, self.read_sync, fn)

    def _read_once(self, fn: Callable[[Connection], T]) -> T:
        with self.engine.connect() as conn:
            conn = conn.execution_options(dex_readonly=True)
            with conn.begin():
                return fn(conn)

    def _retrying(self, run: Callable[[], T]) -> T:
        """Runs a transaction until it commits, or until `retry_seconds` ran out. A failed
        transaction rolled back whole, so trying it again is safe; a commit whose answer was
        lost may have taken effect, which every Step transaction tolerates (it re-reads the
        Step row under the session lock and is fenced by the attempt number)."""
        deadline = None if self.retry_seconds is None else time.monotonic() + self.retry_seconds
        delay = 0.05
        while True:
            try:
                result = run()
            except (OperationalError, DBAPIError) as error:
                if not self._is_transient(error):
                    raise
                if deadline is not None and time.monotonic() > deadline:
                    raise DatabaseUnavailableError(
                        f"the database at {self.outage.where} is unavailable: {error.orig}"
                    ) from error
                self.outage.failed(error)
                time.sleep(delay)
                delay = min(delay * 2, MAX_RETRY_DELAY)
                continue
            self.outage.ended()
            return result

    def _is_transient(self, error: DBAPIError) -> bool:
        if error.connection_invalidated:
            return True
        if not self.sqlite and isinstance(error, OperationalError):
            # Postgres: a lost or refused connection, a server shutting down, a deadlock or
            # serialization failure; each rolled the transaction back.
            return True
        return is_unavailable_text(str(error.orig))

    def close(self) -> None:
        self._readers.shutdown(wait=False)
        self._writers.shutdown(wait=False)
        self.engine.dispose()
        if self._inline_engine is not None:
            self._inline_engine.dispose()
        if self._wake_sender is not None:
            self._wake_sender.close()
        if self._enqueuer is not None:
            self._enqueuer.close()


class Outage:
    """Says once that the database became unavailable, and once that it is back."""

    def __init__(self, where: str) -> None:
        self.where = where
        self._since: float | None = None
        self._lock = threading.Lock()
        # Told when an outage begins (None) and when it ends (its length in seconds): the
        # Prometheus metrics (dex_agents.metrics).
        self.listener: Callable[[float | None], None] | None = None

    @property
    def active(self) -> bool:
        return self._since is not None

    def failed(self, error: DBAPIError) -> None:
        with self._lock:
            if self._since is not None:
                return
            self._since = time.monotonic()
        if self.listener is not None:
            self.listener(None)
        log.warning(
            "the database at %s is unavailable (%s); Steps wait and retry until it returns",
            self.where,
            one_line_error(error),
        )

    def ended(self) -> None:
        if self._since is None:  # the common case, without taking the lock
            return
        with self._lock:
            since, self._since = self._since, None
        if since is not None:
            length = time.monotonic() - since
            if self.listener is not None:
                self.listener(length)
            log.warning("the database at %s is available again after %.1f s", self.where, length)


# What a driver says when the database is unreachable, restarting or locked.
_UNAVAILABLE_MARKERS = (
    "database is locked",
    "database table is locked",
    "connection refused",
    "could not connect",
    "server closed the connection",
    "terminating connection",
    "connection is closed",
    "connection is lost",
    "consuming input failed",
    "the database system is starting up",
    "the database system is shutting down",
    "the database system is in recovery mode",
    "the database system is not yet accepting connections",
    "the database system is not accepting connections",
)


def one_line_error(error: BaseException) -> str:
    """The first line of a database driver's error, without SQLAlchemy's trailer."""
    detail = error.orig if isinstance(error, DBAPIError) else error
    lines = [line.strip() for line in str(detail).splitlines() if line.strip()]
    return lines[0] if lines else type(detail).__name__


def is_unavailable_text(text: str) -> bool:
    text = text.lower()
    return any(marker in text for marker in _UNAVAILABLE_MARKERS)


class QuietOutageFilter(logging.Filter):
    """Drops DBOS's own warnings about an unavailable database (one per retry and per queue
    poll); the Database above says it once per outage."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.WARNING or not is_unavailable_text(record.getMessage())
