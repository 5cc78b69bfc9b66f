"""The versioned schema: an ordered list of migrations, recorded in `dex_schema_version`.

Every process that opens the database (a Worker, a client) calls `migrate`. When the
database is current this is one read. Otherwise each pending migration runs in a
transaction of its own together with the row that records it, under a lock that makes a
second migrating process wait and then find the work done: Postgres takes a transaction-level
advisory lock, SQLite the write lock of `BEGIN IMMEDIATE` (the engine of `db.create_engine`
begins every writer that way). A database that holds dex tables but no version table was
written by dex-agents before versioning (0.2) and is adopted as version 1. A database newer
than this code is refused with `SchemaTooNewError` before anything is written.

A migration never changes once released: the baseline below is a frozen copy of the tables,
not `db.metadata`, and a test checks that the migrations build exactly what `db.py` declares.
To change a table, change `db.py` and append a migration.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from .clock import now_text
from .errors import SchemaTooNewError
from .logs import redacted_url

VERSION_TABLE = "dex_schema_version"
# Steps went through this one DBOS queue before version 2, and through one queue per flow
# type since (routing.step_queue_name, frozen here as migration 2 knows it).
LEGACY_STEP_QUEUE = "dex_agents_steps"
# DBOS's schema on Postgres (the Worker keeps DBOS's default); SQLite has no schemas.
DBOS_SCHEMA = "dbos"
# The Step workflow's DBOS name (routing.STEP_WORKFLOW, frozen here).
STEP_WORKFLOW = "dex_agents.run_step"
# The Postgres advisory lock that serializes migrations ("dexschem" in ASCII).
MIGRATION_LOCK_KEY = 0x6465_7873_6368_656D

version_table = sa.Table(
    VERSION_TABLE,
    sa.MetaData(),
    sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("description", sa.String(255), nullable=False),
    sa.Column("applied_at", sa.String(32), nullable=False),
)


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    apply: Callable[[Connection], None]


def flow_type_queue(flow_type: str) -> str:
    """The queue of one flow type's Steps, as migration 2 moves them."""
    return f"{LEGACY_STEP_QUEUE}:{flow_type}"


def migrate(engine: Engine) -> int:
    """Brings the database to `LATEST_VERSION`; returns the version it found (0: empty).

    Raises `SchemaTooNewError`, having changed nothing, when the database is newer than this code.
    """
    with engine.connect() as conn:
        conn = conn.execution_options(dex_readonly=True)
        with conn.begin():
            found = current_version(conn)
    _refuse_newer(found, engine)
    for migration in MIGRATIONS[found:]:
        _apply(engine, migration)
    return found


def current_version(conn: Connection) -> int:
    """The version recorded, else 1 when dex tables exist (written before versioning), else 0."""
    if _has_table(conn, VERSION_TABLE):
        latest = conn.execute(sa.select(sa.func.max(version_table.c.version))).scalar()
        return int(latest or 0)
    return 1 if _has_table(conn, "dex_sessions") else 0


def _apply(engine: Engine, migration: Migration) -> None:
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(sa.select(sa.func.pg_advisory_xact_lock(MIGRATION_LOCK_KEY)))
        version = current_version(conn)
        _refuse_newer(version, engine)
        if version >= migration.version:
            return  # another process migrated while this one waited for the lock
        if not _has_table(conn, VERSION_TABLE):
            version_table.create(conn)
            if version == 1:
                _record(conn, 1, "baseline, adopted: written before schema versioning")
        migration.apply(conn)
        _record(conn, migration.version, migration.description)


def _record(conn: Connection, version: int, description: str) -> None:
    conn.execute(
        version_table.insert().values(
            version=version, description=description, applied_at=now_text()
        )
    )


def _refuse_newer(version: int, engine: Engine) -> None:
    if version > LATEST_VERSION:
        url = redacted_url(engine.url)
        raise SchemaTooNewError(
            f"the database at {url} has schema version {version}, but this dex-agents knows "
            f"versions up to {LATEST_VERSION}: upgrade dex-agents to use this database"
        )


def _has_table(conn: Connection, name: str, schema: str | None = None) -> bool:
    return sa.inspect(conn).has_table(name, schema=schema)


# Migration 1 --------------------------------------------------------------------------------


def _create_baseline(conn: Connection) -> None:
    _baseline_tables().create_all(conn)


def _baseline_tables() -> sa.MetaData:
    """The tables of dex-agents 0.2, the first release, frozen."""
    baseline = sa.MetaData()
    sa.Table(
        "dex_sessions",
        baseline,
        sa.Column("session_id", sa.String(255), primary_key=True),
        sa.Column("flow_type", sa.String(255), nullable=False),
        sa.Column("created_at", sa.String(32), nullable=False),
        sa.Column("updated_at", sa.String(32), nullable=False),
        sa.Column("start_input", sa.Text, nullable=False),
        sa.Column("state", sa.Text),
        sa.Column("usage", sa.Text),
        sa.Column("pending_interrupts", sa.Text),
        sa.Column("framework_run_state", sa.Text),
        sa.Column("turn_cancellation", sa.Text),
        sa.Column("session_settings", sa.Text),
        sa.Column("turn_session_settings", sa.Text),
        sa.Column("turn_reply_sequence", sa.Text),
        sa.Column("plan", sa.Text),
        sa.Column("pending_plan_execution", sa.Text),
        sa.Column("context_summary", sa.Text),
        # What RPCs must know of the Flow (plan mode), written by the Worker at each turn start.
        sa.Column("features", sa.Text),
        sa.Column("step_counter", sa.Integer, nullable=False, default=0),
        sa.Column("event_counter", sa.Integer, nullable=False, default=0),
    )

    sa.Table(
        "dex_messages",
        baseline,
        sa.Column("session_id", sa.String(255), primary_key=True),
        sa.Column("sequence", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("turn_id", sa.String(64), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("text", sa.Text),
        sa.Column("tool_call_id", sa.String(255)),
        sa.Column("tool_name", sa.String(255)),
        sa.Column("tool_arguments", sa.Text),
        sa.Column("tool_output", sa.Text),
        sa.Column("framework_item", sa.Text, nullable=False),
        sa.Column("created_at", sa.String(32), nullable=False),
    )

    sa.Table(
        "dex_tool_calls",
        baseline,
        sa.Column("session_id", sa.String(255), primary_key=True),
        sa.Column("tool_call_id", sa.String(255), primary_key=True),
        sa.Column("turn_id", sa.String(64), nullable=False),
        sa.Column("deferral_order", sa.Integer, nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("record", sa.Text, nullable=False),
    )

    # Channels: a message is a row; consuming it deletes the row.
    sa.Table(
        "dex_channel_messages",
        baseline,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.String(255), nullable=False),
        sa.Column("channel", sa.String(64), nullable=False),
        sa.Column("key", sa.String(255), nullable=False, default=""),
        sa.Column("payload", sa.Text, nullable=False),
        sa.Column("created_at", sa.String(32), nullable=False),
        sa.Index("dex_channel_messages_by_key", "session_id", "channel", "key", "id"),
    )

    sa.Table(
        "dex_events",
        baseline,
        sa.Column("session_id", sa.String(255), primary_key=True),
        sa.Column("offset", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("type", sa.String(128), nullable=False),
        sa.Column("turn_id", sa.String(64)),
        sa.Column("attempt", sa.Integer, nullable=False),
        sa.Column("payload", sa.Text, nullable=False),
        sa.Column("step_execution_id", sa.String(128), nullable=False),
        sa.Column("created_at", sa.String(32), nullable=False),
    )

    sa.Table(
        "dex_steps",
        baseline,
        sa.Column("session_id", sa.String(255), primary_key=True),
        sa.Column("step_execution_id", sa.String(128), primary_key=True),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("step_type", sa.String(64), nullable=False),
        sa.Column("input", sa.Text, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False, default=0),
        # Set once an attempt got past its point of no return (for a tool: tool_call_started).
        sa.Column("progress_started", sa.Boolean, nullable=False, default=False),
        sa.Column("checkpoint", sa.Text),
        sa.Column("error", sa.Text),
        sa.Column("next_steps", sa.Text, nullable=False, default="[]"),
        sa.Column("scheduled_at", sa.String(32), nullable=False),
        sa.Column("started_at", sa.String(32)),
        sa.Column("ended_at", sa.String(32)),
        sa.Index("dex_steps_by_seq", "session_id", "seq"),
    )

    # Cross-process wake-ups: a writer inserts the session ID; Workers poll for new rows.
    sa.Table(
        "dex_wakeups",
        baseline,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.String(255), nullable=False),
        sa.Column("created", sa.Float, nullable=False),
        # The writing process's Database, so a Worker skips the wake-ups it already delivered.
        sa.Column("origin", sa.String(32), nullable=False, default=""),
    )

    # Worker liveness: each Worker bumps its beat counter; the others watch the counter move.
    sa.Table(
        "dex_workers",
        baseline,
        sa.Column("worker_id", sa.String(255), primary_key=True),
        sa.Column("beats", sa.Integer, nullable=False),
        # running, or stopped: a Worker that stopped cleanly hands its Steps over at once.
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("flow_types", sa.Text, nullable=False),
        sa.Column("lease_seconds", sa.Float, nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column("started_at", sa.String(32), nullable=False),
        sa.Column("heartbeat_at", sa.String(32), nullable=False),
    )
    return baseline


# Migration 2 --------------------------------------------------------------------------------


def _move_steps_to_flow_type_queues(conn: Connection) -> None:
    """Moves the Step workflows still to run (ENQUEUED, or PENDING on a Worker that may be
    gone and whose recovery re-enqueues them) from the single queue to their flow type's,
    and so the successors that were started without a queue, which recovery would hand to
    DBOS's internal queue and so to any Worker.

    A workflow's ID is `<session_id>/<step_execution_id>`; step execution IDs hold no "/",
    session IDs may. Without DBOS's tables (a database DBOS never opened) nothing waits."""
    workflows = _dbos_workflow_status(conn)
    if workflows is None:
        return
    waiting = conn.execute(
        sa.select(workflows.c.workflow_uuid).where(
            sa.or_(
                workflows.c.queue_name == LEGACY_STEP_QUEUE,
                sa.and_(workflows.c.queue_name.is_(None), workflows.c.name == STEP_WORKFLOW),
            ),
            workflows.c.status.in_(("ENQUEUED", "PENDING")),
        )
    ).scalars()
    by_session: dict[str, list[str]] = {}
    for workflow_id in waiting:
        by_session.setdefault(workflow_id.rpartition("/")[0], []).append(workflow_id)
    for session_id, flow_type in _flow_types(conn, list(by_session)):
        conn.execute(
            workflows.update()
            .where(workflows.c.workflow_uuid.in_(by_session[session_id]))
            .values(queue_name=flow_type_queue(flow_type))
        )


def _dbos_workflow_status(conn: Connection) -> sa.TableClause | None:
    schema = DBOS_SCHEMA if conn.dialect.name == "postgresql" else None
    if not _has_table(conn, "workflow_status", schema=schema):
        return None
    return sa.table(
        "workflow_status",
        sa.column("workflow_uuid", sa.Text),
        sa.column("status", sa.Text),
        sa.column("queue_name", sa.Text),
        sa.column("name", sa.Text),
        schema=schema,
    )


def _flow_types(conn: Connection, session_ids: list[str]) -> list[tuple[str, str]]:
    if not session_ids:
        return []
    sessions = sa.table("dex_sessions", sa.column("session_id"), sa.column("flow_type"))
    query = sa.select(sessions.c.session_id, sessions.c.flow_type)
    return [
        (row[0], row[1])
        for row in conn.execute(query.where(sessions.c.session_id.in_(session_ids)))
    ]


# Migration 3 --------------------------------------------------------------------------------


def _add_trace_context(conn: Connection) -> None:
    """AgentTraceContext: the traceparent of the session's current activation root, written
    only while tracing is on (see dex_agents.otel)."""
    conn.execute(sa.text("ALTER TABLE dex_sessions ADD COLUMN trace_context TEXT"))


# Migration 4 --------------------------------------------------------------------------------


def _add_parking(conn: Connection) -> None:
    """Parked Steps (parking.py): a wake counter and a due time on each Step execution, and
    partial indexes over the parked rows. Steps that wait the old way (a workflow each) need
    nothing: the Worker that recovers them parks them after its hot window."""
    float_type = "DOUBLE PRECISION" if conn.dialect.name == "postgresql" else "FLOAT"
    conn.execute(sa.text("ALTER TABLE dex_steps ADD COLUMN wakes INTEGER DEFAULT 0 NOT NULL"))
    conn.execute(sa.text(f"ALTER TABLE dex_steps ADD COLUMN due_at {float_type}"))
    conn.execute(
        sa.text("CREATE INDEX dex_steps_parked ON dex_steps (session_id) WHERE status = 'parked'")
    )
    conn.execute(
        sa.text(
            "CREATE INDEX dex_steps_parked_due ON dex_steps (due_at) "
            "WHERE status = 'parked' AND due_at IS NOT NULL"
        )
    )


# Migration 5 --------------------------------------------------------------------------------


def _bound_event_logs(conn: Connection) -> None:
    """The bounded event log (store.trim_events): each event's size, and on each session the
    bytes of its events, the offset through which they were trimmed and the Flow's capacity.
    The sizes of the events already stored are computed here, once (the bytes of the payload,
    type, turn and Step IDs and a fixed overhead, as store.event_size counts them)."""
    big = "BIGINT"
    conn.execute(sa.text("ALTER TABLE dex_events ADD COLUMN size INTEGER DEFAULT 0 NOT NULL"))
    conn.execute(
        sa.text(f"ALTER TABLE dex_sessions ADD COLUMN event_bytes {big} DEFAULT 0 NOT NULL")
    )
    conn.execute(
        sa.text("ALTER TABLE dex_sessions ADD COLUMN events_trimmed INTEGER DEFAULT 0 NOT NULL")
    )
    conn.execute(sa.text(f"ALTER TABLE dex_sessions ADD COLUMN event_capacity {big}"))
    pg = conn.dialect.name == "postgresql"

    def length(column: str) -> str:
        return f"octet_length({column})" if pg else f"length(CAST({column} AS BLOB))"

    conn.execute(
        sa.text(
            f"UPDATE dex_events SET size = {EVENT_OVERHEAD_BYTES} + {length('payload')} + "
            f"{length('type')} + {length('step_execution_id')} + "
            f"coalesce({length('turn_id')}, 0)"
        )
    )
    conn.execute(
        sa.text(
            "UPDATE dex_sessions SET event_bytes = (SELECT coalesce(sum(e.size), 0) "
            "FROM dex_events e WHERE e.session_id = dex_sessions.session_id)"
        )
    )
    # The metrics' sessions by state read only these rows (metrics.py).
    conn.execute(
        sa.text(
            "CREATE INDEX dex_steps_active ON dex_steps (status, session_id) "
            "WHERE status IN ('running', 'waiting')"
        )
    )
    conn.execute(
        sa.text(
            "CREATE INDEX dex_sessions_waiting_for_person ON dex_sessions (flow_type) "
            "WHERE pending_interrupts IS NOT NULL AND pending_interrupts <> '[]'"
        )
    )


# The fixed part of an event's size (offset, attempt, created_at, row overhead), frozen here
# as migration 5 counts it (store.EVENT_OVERHEAD_BYTES).
EVENT_OVERHEAD_BYTES = 64


# Migration 6 --------------------------------------------------------------------------------

# The failure routes, whose input carried the recovery before version 6 (frozen here).
FAILURE_ROUTES = ("RecordTurnFailure", "RecordToolFailure", "RecordToolOutcomeUnknown")


def _move_recovery_out_of_input(conn: Connection) -> None:
    """A failure route's recovery (why the Step that routed to it failed) gets its own column
    on the Step execution; it rode in the input, `{"input": ..., "recovery": ...}`, which the
    Step history showed as the route's input. Rows written that way move: the input becomes
    the failing Step's input again, the recovery goes to its column. Inputs are ASCII JSON
    (store.schedule_step), so they are read and written as stored."""
    conn.execute(sa.text("ALTER TABLE dex_steps ADD COLUMN recovery TEXT"))
    steps = sa.table(
        "dex_steps",
        sa.column("session_id", sa.Text),
        sa.column("step_execution_id", sa.Text),
        sa.column("step_type", sa.Text),
        sa.column("input", sa.Text),
        sa.column("recovery", sa.Text),
    )
    routed = conn.execute(
        sa.select(steps.c.session_id, steps.c.step_execution_id, steps.c.input).where(
            steps.c.step_type.in_(FAILURE_ROUTES), steps.c.input.like('{"input":%')
        )
    ).all()
    for session_id, step_execution_id, stored in routed:
        value = json.loads(stored)
        if not (isinstance(value, dict) and set(value) == {"input", "recovery"}):
            continue
        conn.execute(
            steps.update()
            .where(
                steps.c.session_id == session_id,
                steps.c.step_execution_id == step_execution_id,
            )
            .values(
                input=json.dumps(value["input"], separators=(",", ":")),
                recovery=json.dumps(value["recovery"], separators=(",", ":")),
            )
        )


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "baseline: the tables of dex-agents 0.2", _create_baseline),
    Migration(
        2, "Step workflows move to the queue of their flow type", _move_steps_to_flow_type_queues
    ),
    Migration(3, "sessions keep the trace context of their activation", _add_trace_context),
    Migration(4, "waiting Steps park: a wake counter and a due time per Step", _add_parking),
    Migration(
        5,
        "event logs are bounded, and the metrics' sessions by state are indexed",
        _bound_event_logs,
    ),
    Migration(
        6,
        "a failure route's recovery in its own column, not in its input",
        _move_recovery_out_of_input,
    ),
)
LATEST_VERSION = MIGRATIONS[-1].version
assert [m.version for m in MIGRATIONS] == list(range(1, LATEST_VERSION + 1))
