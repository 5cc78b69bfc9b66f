"""Session records on one database connection: attributes, messages, tool calls, channels,
events, Step executions and wake-ups. Every function runs inside the caller's transaction.

Writers first lock the session row (`lock_session`), which serializes every change to one
session on Postgres as SQLite's single writer does; a Step or RPC therefore sees committed
state only, and two writers never interleave.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from pydantic import TypeAdapter
from sqlalchemy.engine import Connection

from . import db, fastsql
from .clock import now_text
from .errors import SessionNotFoundError as SessionNotFoundError  # re-exported: its old home
from .runner import FrameworkMessage
from .types import (
    AgentInterrupt,
    AgentMessage,
    AgentPlan,
    AgentSessionStartInput,
    AgentState,
    AgentToolCall,
    AgentUsage,
    ContextSummary,
    PlanExecutionRequest,
    StepExecution,
    TurnCancellationRequest,
    TurnReplySequence,
    TurnSessionSettings,
    TurnStatus,
)
from .wake_socket import TURN_KEY_PREFIX

# Channel names, as the contract names them.
QUEUED_USER_MESSAGES = "QueuedUserMessages"
INTERRUPT_RESOLUTIONS = "InterruptResolutions"
TOOL_CALL_RESULTS = "ToolCallResults"
STEERED_USER_MESSAGES = "SteeredUserMessages"
TURN_CONTROL_REQUESTS = "TurnControlRequests"
TOOL_CALL_CANCELLATIONS = "ToolCallCancellations"
PLAN_EXECUTIONS = "PlanExecutions"

# The bounded event log (trim_events): a session keeps this many bytes of events by default
# (AgentSessionOptions.event_capacity_bytes), trimmed down to TRIM_TO_RATIO of its capacity
# when a commit takes it past, reading and deleting at most TRIM_BATCH_ROWS rows a commit.
DEFAULT_EVENT_CAPACITY_BYTES = 10 * 1024 * 1024
TRIM_TO_RATIO = 0.9
TRIM_BATCH_ROWS = 1000
# The fixed part of an event's size: its offset, attempt, creation time and row overhead.
EVENT_OVERHEAD_BYTES = 64

_interrupts = TypeAdapter(list[AgentInterrupt])

# The hot statements are built once, and run by `fastsql` (see there why).
_SESSION = sa.select(db.sessions).where(db.sessions.c.session_id == sa.bindparam("sid"))
_SESSION_LOCKED = _SESSION.with_for_update()
_STEP = sa.select(db.steps).where(
    db.steps.c.session_id == sa.bindparam("sid"),
    db.steps.c.step_execution_id == sa.bindparam("sx"),
)
_TOOL_CALL = sa.select(db.tool_calls.c.record).where(
    db.tool_calls.c.session_id == sa.bindparam("sid"),
    db.tool_calls.c.tool_call_id == sa.bindparam("call"),
)
_TOOL_CALLS = (
    sa.select(db.tool_calls.c.record)
    .where(db.tool_calls.c.session_id == sa.bindparam("sid"))
    .order_by(db.tool_calls.c.deferral_order)
)
_CHANNEL = db.channel_messages.c
_IN_CHANNEL = (_CHANNEL.session_id == sa.bindparam("sid"), _CHANNEL.channel == sa.bindparam("ch"))
_COUNT = sa.select(sa.func.count()).where(*_IN_CHANNEL)
_COUNT_KEY = _COUNT.where(_CHANNEL.key == sa.bindparam("key"))
_PEEK = (
    sa.select(_CHANNEL.id, _CHANNEL.key, _CHANNEL.payload)
    .where(*_IN_CHANNEL)
    .order_by(_CHANNEL.id)
    .limit(sa.bindparam("n"))
)
_PEEK_KEY = _PEEK.where(_CHANNEL.key == sa.bindparam("key"))
# Updates set the columns their parameters name (the b_ names bind the key).
_UPDATE_SESSION = db.sessions.update().where(db.sessions.c.session_id == sa.bindparam("b_sid"))
_INSERT_EVENT = db.events.insert()
_INSERT_MESSAGE = db.messages.insert()
_MESSAGES_AFTER = (
    sa.select(db.messages)
    .where(db.messages.c.session_id == sa.bindparam("sid"))
    .where(db.messages.c.sequence > sa.bindparam("after"))
    .order_by(db.messages.c.sequence)
)
_TURN_MESSAGES = _MESSAGES_AFTER.where(db.messages.c.turn_id == sa.bindparam("turn"))
_INSERT_CHANNEL_MESSAGE = db.channel_messages.insert()
_CLEAR_CHANNEL = db.channel_messages.delete().where(*_IN_CHANNEL)
_DELETE_CHANNEL_MESSAGE = db.channel_messages.delete().where(_CHANNEL.id == sa.bindparam("id"))
_DELETE_TOOL_CALLS = db.tool_calls.delete().where(db.tool_calls.c.session_id == sa.bindparam("sid"))
_INSERT_TOOL_CALL = db.tool_calls.insert()
_UPDATE_TOOL_CALL = db.tool_calls.update().where(
    db.tool_calls.c.session_id == sa.bindparam("b_sid"),
    db.tool_calls.c.tool_call_id == sa.bindparam("b_call"),
)
_UPDATE_STEP = db.steps.update().where(
    db.steps.c.session_id == sa.bindparam("b_sid"),
    db.steps.c.step_execution_id == sa.bindparam("b_sx"),
)


@dataclass
class Session:
    """One session row, parsed. Assigning one of its stored attributes (`session.state =
    ...`) marks it for `save_session`; the identity and counters are not assigned this way.
    Attributes are replaced, never changed in place (a list is assigned anew)."""

    session_id: str
    flow_type: str
    created_at: str
    updated_at: str
    start_input: AgentSessionStartInput
    state: AgentState | None
    usage: AgentUsage
    pending_interrupts: list[AgentInterrupt]
    framework_run_state: str | None
    turn_cancellation: TurnCancellationRequest | None
    session_settings: dict[str, Any] | None
    turn_session_settings: TurnSessionSettings | None
    turn_reply_sequence: TurnReplySequence | None
    plan: AgentPlan | None
    pending_plan_execution: PlanExecutionRequest | None
    context_summary: ContextSummary | None
    features: dict[str, Any] | None
    step_counter: int
    event_counter: int
    # AgentTraceContext: written only while tracing is on (dex_agents.otel).
    trace_context: str | None = None
    # The bounded event log (trim_events): kept bytes, trimmed through, the Flow's capacity.
    event_bytes: int = 0
    events_trimmed: int = 0
    event_capacity: int | None = None
    dirty: set[str] = field(default_factory=set)

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        # `dirty` is the last field: while __init__ runs, nothing is marked.
        if name in _SAVED_ATTRIBUTES and "dirty" in self.__dict__:
            self.dirty.add(name)

    @property
    def active_state(self) -> AgentState:
        if self.state is None:
            raise RuntimeError(f"session {self.session_id} has not started")
        return self.state

    def turn_settings(self) -> dict[str, Any]:
        """TurnSessionSettings of the active turn; a copy tagged with another turn reads {}."""
        copy = self.turn_session_settings
        if copy is None or self.state is None or copy.turn_id != self.state.active_turn_id:
            return {}
        return copy.session_settings


# The session row's columns that a Step or an RPC replaces; save_session writes those assigned.
_SAVED_ATTRIBUTES = frozenset(
    {
        "state",
        "usage",
        "pending_interrupts",
        "framework_run_state",
        "turn_cancellation",
        "session_settings",
        "turn_session_settings",
        "turn_reply_sequence",
        "plan",
        "pending_plan_execution",
        "context_summary",
        "features",
        "trace_context",
    }
)


def _load_json(text: str | None, model: Any) -> Any:
    return None if text is None else model.model_validate_json(text)


def _session_from_row(row: Any) -> Session:
    return Session(
        session_id=row.session_id,
        flow_type=row.flow_type,
        created_at=row.created_at,
        updated_at=row.updated_at,
        start_input=AgentSessionStartInput.model_validate_json(row.start_input),
        state=_load_json(row.state, AgentState),
        usage=_load_json(row.usage, AgentUsage) or AgentUsage(),
        pending_interrupts=_interrupts.validate_python(json.loads(row.pending_interrupts or "[]")),
        framework_run_state=row.framework_run_state,
        turn_cancellation=_load_json(row.turn_cancellation, TurnCancellationRequest),
        session_settings=json.loads(row.session_settings) if row.session_settings else None,
        turn_session_settings=_load_json(row.turn_session_settings, TurnSessionSettings),
        turn_reply_sequence=_load_json(row.turn_reply_sequence, TurnReplySequence),
        plan=_load_json(row.plan, AgentPlan),
        pending_plan_execution=_load_json(row.pending_plan_execution, PlanExecutionRequest),
        context_summary=_load_json(row.context_summary, ContextSummary),
        features=json.loads(row.features) if row.features else None,
        step_counter=row.step_counter,
        event_counter=row.event_counter,
        trace_context=row.trace_context,
        event_bytes=row.event_bytes,
        events_trimmed=row.events_trimmed,
        event_capacity=row.event_capacity,
    )


def create_session(
    conn: Connection, session_id: str, flow_type: str, start_input: AgentSessionStartInput
) -> Session:
    now = now_text()
    conn.execute(
        db.sessions.insert().values(
            session_id=session_id,
            flow_type=flow_type,
            created_at=now,
            updated_at=now,
            start_input=start_input.to_json(),
            step_counter=0,
            event_counter=0,
        )
    )
    return lock_session(conn, session_id)


def session_exists(conn: Connection, session_id: str) -> bool:
    query = sa.select(db.sessions.c.session_id).where(db.sessions.c.session_id == session_id)
    return conn.execute(query).first() is not None


def lock_session(conn: Connection, session_id: str) -> Session:
    """Loads the session row, locked for the rest of the transaction on Postgres."""
    query = _SESSION_LOCKED if conn.dialect.name == "postgresql" else _SESSION
    row = fastsql.first(conn, query, {"sid": session_id})
    if row is None:
        raise SessionNotFoundError(session_id)
    return _session_from_row(row)


def consistent_read(conn: Connection) -> None:
    """Makes the rest of this read transaction see one snapshot of the database. Call it
    first. SQLite's WAL readers always do; Postgres needs REPEATABLE READ for it."""
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")


def read_session(conn: Connection, session_id: str) -> Session:
    """Loads the session row without locking it (for reads and wait conditions)."""
    row = fastsql.first(conn, _SESSION, {"sid": session_id})
    if row is None:
        raise SessionNotFoundError(session_id)
    return _session_from_row(row)


def _dump(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, list):
        return json.dumps([item.model_dump(mode="json") for item in value])
    if isinstance(value, dict):
        return json.dumps(value, separators=(",", ":"))
    if isinstance(value, str):
        return value
    text: str = value.to_json()
    return text


def save_session(conn: Connection, session: Session) -> None:
    values: dict[str, Any] = {name: _dump(getattr(session, name)) for name in session.dirty}
    values["step_counter"] = session.step_counter
    values["event_counter"] = session.event_counter
    values["event_bytes"] = session.event_bytes
    values["events_trimmed"] = session.events_trimmed
    values["event_capacity"] = session.event_capacity
    values["updated_at"] = now_text()
    fastsql.execute(conn, _UPDATE_SESSION, {"b_sid": session.session_id, **values})
    session.dirty.clear()
    # Clients wait on the snapshot: every change of the session row wakes them.
    wake(conn, session.session_id)


def list_sessions(conn: Connection, limit: int = 100) -> list[Session]:
    query = sa.select(db.sessions).order_by(db.sessions.c.created_at.desc()).limit(limit)
    return [_session_from_row(row) for row in conn.execute(query)]


# Messages -------------------------------------------------------------------------------


def append_messages(
    conn: Connection, session: Session, turn_id: str, items: Sequence[FrameworkMessage]
) -> list[AgentMessage]:
    if not items:
        return []
    state = session.active_state
    now = now_text()
    stored: list[AgentMessage] = []
    for item in items:
        stored.append(
            AgentMessage(
                sequence=state.next_message_sequence + len(stored),
                turn_id=turn_id,
                role=item.role,
                text=item.text,
                tool_call_id=item.tool_call_id,
                tool_name=item.tool_name,
                tool_arguments=item.tool_arguments,
                tool_output=item.tool_output,
                framework_item=item.framework_item,
                created_at=now,
            )
        )
    fastsql.execute_many(
        conn,
        _INSERT_MESSAGE,
        [{"session_id": session.session_id, **m.model_dump()} for m in stored],
    )
    session.state = state.model_copy(
        update={"next_message_sequence": state.next_message_sequence + len(stored)}
    )
    return stored


def _message(row: Any) -> AgentMessage:
    return AgentMessage(
        sequence=row.sequence,
        turn_id=row.turn_id,
        role=row.role,
        text=row.text,
        tool_call_id=row.tool_call_id,
        tool_name=row.tool_name,
        tool_arguments=row.tool_arguments,
        tool_output=row.tool_output,
        framework_item=row.framework_item,
        created_at=row.created_at,
    )


def load_messages(
    conn: Connection, session_id: str, *, after_sequence: int = 0
) -> list[AgentMessage]:
    rows = fastsql.rows(conn, _MESSAGES_AFTER, {"sid": session_id, "after": after_sequence})
    return [_message(row) for row in rows]


def turn_messages(
    conn: Connection, session_id: str, turn_id: str, *, after_sequence: int = 0
) -> list[AgentMessage]:
    params = {"sid": session_id, "after": after_sequence, "turn": turn_id}
    return [_message(row) for row in fastsql.rows(conn, _TURN_MESSAGES, params)]


def messages_before(
    conn: Connection, session_id: str, before_sequence: int | None, limit: int
) -> list[AgentMessage]:
    """The `limit` newest messages before `before_sequence`, oldest first."""
    query = sa.select(db.messages).where(db.messages.c.session_id == session_id)
    if before_sequence is not None:
        query = query.where(db.messages.c.sequence < before_sequence)
    query = query.order_by(db.messages.c.sequence.desc()).limit(limit)
    return [_message(row) for row in reversed(list(conn.execute(query)))]


def delete_messages_through(conn: Connection, session_id: str, sequence: int) -> int:
    """Retention: deletes every stored message up to and including `sequence`."""
    result = conn.execute(
        db.messages.delete().where(
            db.messages.c.session_id == session_id, db.messages.c.sequence <= sequence
        )
    )
    return int(result.rowcount)


def first_message_sequence(conn: Connection, session_id: str) -> int | None:
    query = sa.select(sa.func.min(db.messages.c.sequence)).where(
        db.messages.c.session_id == session_id
    )
    value: int | None = conn.execute(query).scalar()
    return value


# Tool call records ------------------------------------------------------------------------


def insert_tool_call(conn: Connection, session_id: str, record: AgentToolCall) -> None:
    values = {
        "session_id": session_id,
        "tool_call_id": record.tool_call_id,
        "turn_id": record.turn_id,
        "deferral_order": record.deferral_order,
        "status": record.status,
        "record": record.to_json(),
    }
    fastsql.execute(conn, _INSERT_TOOL_CALL, values)


def save_tool_call(conn: Connection, session_id: str, record: AgentToolCall) -> None:
    values = {"status": record.status, "record": record.to_json()}
    fastsql.execute(
        conn, _UPDATE_TOOL_CALL, {"b_sid": session_id, "b_call": record.tool_call_id, **values}
    )


def load_tool_call(conn: Connection, session_id: str, tool_call_id: str) -> AgentToolCall | None:
    text = fastsql.scalar(conn, _TOOL_CALL, {"sid": session_id, "call": tool_call_id})
    return None if text is None else AgentToolCall.model_validate_json(text)


def load_tool_calls(conn: Connection, session_id: str) -> list[AgentToolCall]:
    """The active turn's records (records are deleted when their turn ends)."""
    rows = fastsql.rows(conn, _TOOL_CALLS, {"sid": session_id})
    return [AgentToolCall.model_validate_json(row[0]) for row in rows]


def delete_tool_calls(conn: Connection, session_id: str) -> None:
    fastsql.execute(conn, _DELETE_TOOL_CALLS, {"sid": session_id})


# Channels ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChannelMessage:
    message_id: int
    key: str
    payload: str


def publish(conn: Connection, session_id: str, channel: str, payload: str, key: str = "") -> int:
    values = {"session_id": session_id, "channel": channel, "key": key, "payload": payload}
    message_id = fastsql.insert(conn, _INSERT_CHANNEL_MESSAGE, {**values, "created_at": now_text()})
    wake(conn, session_id)
    return message_id


def peek(
    conn: Connection, session_id: str, channel: str, key: str | None = None, limit: int = 1000
) -> list[ChannelMessage]:
    params = {"sid": session_id, "ch": channel, "n": limit, "key": key}
    rows = fastsql.rows(conn, _PEEK if key is None else _PEEK_KEY, params)
    return [ChannelMessage(row.id, row.key, row.payload) for row in rows]


def count(conn: Connection, session_id: str, channel: str, key: str | None = None) -> int:
    params = {"sid": session_id, "ch": channel, "key": key}
    return int(fastsql.scalar(conn, _COUNT if key is None else _COUNT_KEY, params) or 0)


def consume(
    conn: Connection, session_id: str, channel: str, key: str | None = None, limit: int = 1
) -> list[ChannelMessage]:
    taken = peek(conn, session_id, channel, key, limit)
    delete_channel_messages(conn, [m.message_id for m in taken])
    return taken


def delete_channel_messages(conn: Connection, ids: Iterable[int]) -> int:
    """Deletes the messages of these IDs (one, nearly always); returns how many there were."""
    return sum(fastsql.execute(conn, _DELETE_CHANNEL_MESSAGE, {"id": i}) for i in ids)


def clear_channel(conn: Connection, session_id: str, channel: str) -> None:
    fastsql.execute(conn, _CLEAR_CHANNEL, {"sid": session_id, "ch": channel})


# Events -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class EventRecord:
    type: str
    turn_id: str | None
    attempt: int
    payload: dict[str, Any]
    step_execution_id: str


def write_events(
    conn: Connection,
    session: Session,
    records: Sequence[EventRecord],
    *,
    capacity: int | None = None,
) -> None:
    """Appends events under the session lock the caller holds (who saves the session), and
    trims the oldest past the capacity: `capacity` (the Flow's, which the session keeps), else
    the one the session kept, else the default."""
    if capacity is not None and capacity != session.event_capacity:
        session.event_capacity = capacity
    if not records:
        return
    now = now_text()
    rows = []
    for record in records:
        session.event_counter += 1
        rows.append(_event_row(session.session_id, session.event_counter, record, now))
    fastsql.execute_many(conn, _INSERT_EVENT, rows)
    session.event_bytes, session.events_trimmed = trim_events(
        conn,
        session.session_id,
        kept_bytes=session.event_bytes + sum(row["size"] for row in rows),
        trimmed=session.events_trimmed,
        last=session.event_counter,
        capacity=session.event_capacity or DEFAULT_EVENT_CAPACITY_BYTES,
    )
    wake(conn, session.session_id)
    if any(record.type in TURN_OUTCOME_EVENTS for record in records):
        wake(conn, turn_wake_key(session.session_id))


def append_events_unlocked(
    conn: Connection, session_id: str, records: Sequence[EventRecord]
) -> None:
    """Appends events from outside a session transaction (streamed deltas): reserves the
    offsets with one atomic counter update."""
    if not records:
        return
    now = now_text()
    rows = [_event_row(session_id, 0, record, now) for record in records]
    added = sum(row["size"] for row in rows)
    sessions = db.sessions.c
    result = conn.execute(
        db.sessions.update()
        .where(sessions.session_id == session_id)
        .values(
            event_counter=sessions.event_counter + len(records),
            event_bytes=sessions.event_bytes + added,
        )
        .returning(
            sessions.event_counter,
            sessions.event_bytes,
            sessions.events_trimmed,
            sessions.event_capacity,
        )
    )
    last, kept, trimmed, capacity = result.one()
    first = last - len(records) + 1
    for i, row in enumerate(rows):
        row["offset"] = first + i
    fastsql.execute_many(conn, _INSERT_EVENT, rows)
    trimmed_kept, trimmed_through = trim_events(
        conn,
        session_id,
        kept_bytes=kept,
        trimmed=trimmed,
        last=last,
        capacity=capacity or DEFAULT_EVENT_CAPACITY_BYTES,
    )
    if trimmed_through != trimmed:
        conn.execute(
            db.sessions.update()
            .where(sessions.session_id == session_id)
            .values(
                event_bytes=sessions.event_bytes - (kept - trimmed_kept),
                events_trimmed=trimmed_through,
            )
        )
    wake(conn, session_id)


def event_size(record: EventRecord, payload: str) -> int:
    """What an event counts against its session's capacity: the UTF-8 bytes of its payload,
    type, turn and Step IDs, and a fixed overhead (schema.py's migration 5 counts the same)."""
    texts = (payload, record.type, record.step_execution_id, record.turn_id or "")
    return EVENT_OVERHEAD_BYTES + sum(len(text.encode()) for text in texts)


def trim_events(
    conn: Connection,
    session_id: str,
    *,
    kept_bytes: int,
    trimmed: int,
    last: int,
    capacity: int,
) -> tuple[int, int]:
    """Deletes the session's oldest events while its kept bytes exceed `capacity`, down to
    TRIM_TO_RATIO of it (so that a session at its capacity trims once in a while, in a batch,
    rather than at every commit), never the newest event. Reads and deletes at most
    TRIM_BATCH_ROWS rows: bounded work per commit; a later commit goes on. Returns the kept
    bytes and the offset through which events are now trimmed."""
    if kept_bytes <= capacity:
        return kept_bytes, trimmed
    target = int(capacity * TRIM_TO_RATIO)
    events = db.events.c
    oldest = conn.execute(
        sa.select(events.offset, events.size)
        .where(events.session_id == session_id, events.offset > trimmed, events.offset < last)
        .order_by(events.offset)
        .limit(TRIM_BATCH_ROWS)
    ).all()
    through = trimmed
    for offset, size in oldest:
        if kept_bytes <= target:
            break
        kept_bytes -= size
        through = offset
    if through != trimmed:
        conn.execute(
            db.events.delete().where(
                events.session_id == session_id,
                events.offset > trimmed,
                events.offset <= through,
            )
        )
    return kept_bytes, through


def _event_row(session_id: str, offset: int, record: EventRecord, now: str) -> dict[str, Any]:
    payload = json.dumps(record.payload, separators=(",", ":"))
    return {
        "session_id": session_id,
        "offset": offset,
        "type": record.type,
        "turn_id": record.turn_id,
        "attempt": record.attempt,
        "payload": payload,
        "step_execution_id": record.step_execution_id,
        "created_at": now,
        "size": event_size(record, payload),
    }


def turn_start_offset(conn: Connection, session_id: str, turn_id: str) -> int | None:
    """The offset just before the turn's `turn_started` event, or None without one."""
    query = sa.select(sa.func.min(db.events.c.offset)).where(
        db.events.c.session_id == session_id,
        db.events.c.turn_id == turn_id,
        db.events.c.type == "turn_started",
    )
    first: int | None = conn.execute(query).scalar()
    return None if first is None else first - 1


def read_events(conn: Connection, session_id: str, after: int, limit: int) -> list[Any]:
    params = {"session_id": session_id, "after": after, "limit": limit}
    return fastsql.rows(conn, _EVENTS_AFTER, params)


# Step executions --------------------------------------------------------------------------


@dataclass(frozen=True)
class StepRow:
    session_id: str
    step_execution_id: str
    seq: int
    step_type: str
    input: str
    status: str
    attempts: int
    progress_started: bool
    checkpoint: str | None
    error: str | None
    next_steps: list[str]
    scheduled_at: str
    # How often the Step was woken from parked (parking.py): its wake workflow's number.
    wakes: int = 0
    # When a parked Step is due (epoch seconds), if ever.
    due_at: float | None = None
    # When the Step began: its first attempt, or for a Step that waits, its scheduling (it
    # waits from then on, so its duration is its wait). Set once.
    started_at: str | None = None
    # A failure route's recovery as JSON (stepkit.Recovery), None on every other Step.
    recovery: str | None = None

    @property
    def input_value(self) -> Any:
        return json.loads(self.input)


_INSERT_STEP = db.steps.insert()


def schedule_step(
    conn: Connection,
    session: Session,
    step_type: str,
    step_input: Any,
    *,
    status: str = "scheduled",
    recovery: Mapping[str, object] | None = None,
) -> StepRow:
    """Inserts a new Step execution; returns its row as stored. A Step scheduled waiting
    starts now: its history shows when it began waiting and how long it waited. A failure
    route gets the failing Step's input and, beside it, its `recovery`."""
    session.step_counter += 1
    scheduled_at = now_text()
    row = StepRow(
        session_id=session.session_id,
        step_execution_id=f"{step_type}-{session.step_counter}",
        seq=session.step_counter,
        step_type=step_type,
        input=json.dumps(step_input, separators=(",", ":")),
        status=status,
        attempts=0,
        progress_started=False,
        checkpoint=None,
        error=None,
        next_steps=[],
        scheduled_at=scheduled_at,
        started_at=scheduled_at if status == "waiting" else None,
        recovery=None if recovery is None else json.dumps(recovery, separators=(",", ":")),
    )
    # vars, not asdict: the fields are plain values, and asdict copies each one deeply.
    fastsql.execute(conn, _INSERT_STEP, {**vars(row), "next_steps": "[]"})
    return row


def step_type_of(step_execution_id: str) -> str:
    """The Step type of a Step execution ID (`<step type>-<number>`, see `schedule_step`)."""
    return step_execution_id.rpartition("-")[0]


def load_step(conn: Connection, session_id: str, step_execution_id: str) -> StepRow | None:
    row = fastsql.first(conn, _STEP, {"sid": session_id, "sx": step_execution_id})
    if row is None:
        return None
    return StepRow(
        session_id=row.session_id,
        step_execution_id=row.step_execution_id,
        seq=row.seq,
        step_type=row.step_type,
        input=row.input,
        status=row.status,
        attempts=row.attempts,
        progress_started=bool(row.progress_started),
        checkpoint=row.checkpoint,
        error=row.error,
        next_steps=json.loads(row.next_steps),
        scheduled_at=row.scheduled_at,
        wakes=row.wakes,
        due_at=row.due_at,
        started_at=row.started_at,
        recovery=row.recovery,
    )


def update_step(conn: Connection, session_id: str, step_execution_id: str, **values: Any) -> int:
    if "next_steps" in values:
        values["next_steps"] = json.dumps(values["next_steps"])
    params = {"b_sid": session_id, "b_sx": step_execution_id, **values}
    return fastsql.execute(conn, _UPDATE_STEP, params)


def open_steps(conn: Connection, session_id: str, step_types: Iterable[str]) -> list[StepRow]:
    query = sa.select(db.steps.c.step_execution_id).where(
        db.steps.c.session_id == session_id,
        db.steps.c.step_type.in_(list(step_types)),
        db.steps.c.status.in_(["scheduled", "waiting", "running", PARKED]),
    )
    rows = [load_step(conn, session_id, sx) for sx in conn.execute(query).scalars()]
    return [row for row in rows if row is not None]


# Parked Steps (see parking.py) ------------------------------------------------------------

# The status of a waiting Step that no Worker holds: it waits in its row alone.
PARKED = "parked"


@dataclass(frozen=True)
class ParkedStep:
    """A parked Step execution, with what its wake needs: the wake number its row holds and
    its session's flow type (the queue of the wake)."""

    session_id: str
    step_execution_id: str
    wakes: int
    flow_type: str


_PARKED_COLUMNS = (
    db.steps.c.session_id,
    db.steps.c.step_execution_id,
    db.steps.c.wakes,
    db.sessions.c.flow_type,
)
_PARKED_FROM = db.steps.join(db.sessions, db.sessions.c.session_id == db.steps.c.session_id)
_PARKED_OF_SESSION = (
    sa.select(*_PARKED_COLUMNS)
    .select_from(_PARKED_FROM)
    .where(db.steps.c.session_id == sa.bindparam("sid"), db.steps.c.status == PARKED)
)
_PARKED_OF_SESSIONS = (
    sa.select(*_PARKED_COLUMNS)
    .select_from(_PARKED_FROM)
    .where(
        db.steps.c.session_id.in_(sa.bindparam("sids", expanding=True)),
        db.steps.c.status == PARKED,
    )
)
_DUE = (
    sa.select(*_PARKED_COLUMNS)
    .select_from(_PARKED_FROM)
    .where(
        db.steps.c.status == PARKED,
        db.steps.c.due_at.is_not(None),
        db.steps.c.due_at <= sa.bindparam("now"),
        db.sessions.c.flow_type.in_(sa.bindparam("flow_types", expanding=True)),
    )
    .order_by(db.steps.c.due_at)
    .limit(sa.bindparam("limit"))
)
_NEXT_DUE = (
    sa.select(db.steps.c.due_at)
    .select_from(_PARKED_FROM)
    .where(
        db.steps.c.status == PARKED,
        db.steps.c.due_at.is_not(None),
        db.sessions.c.flow_type.in_(sa.bindparam("flow_types", expanding=True)),
    )
    .order_by(db.steps.c.due_at)
    .limit(1)
)
_UNPARK = (
    db.steps.update()
    .where(
        db.steps.c.session_id == sa.bindparam("b_sid"),
        db.steps.c.step_execution_id == sa.bindparam("b_sx"),
        db.steps.c.status == PARKED,
        db.steps.c.wakes == sa.bindparam("b_wakes"),
    )
    .values(status=sa.bindparam("status"), wakes=sa.bindparam("wakes"), due_at=sa.bindparam("due"))
)


def park_step(
    conn: Connection, session_id: str, step_execution_id: str, due_at: float | None
) -> None:
    """Marks a waiting Step parked; the caller holds the session's lock and has just seen
    its condition not hold. Wakes no session (nothing it waits for changed); a due time
    wakes the Workers' due-time loops (`DUE_WAKE_KEY`), which sleep until the earliest one
    they know."""
    update_step(conn, session_id, step_execution_id, status=PARKED, due_at=due_at)
    if due_at is not None:
        wake(conn, DUE_WAKE_KEY)


def parked_steps(conn: Connection, keys: Iterable[str]) -> list[ParkedStep]:
    """The parked Steps of the sessions among wake-up keys (a control key names none)."""
    session_ids = [key for key in keys if key and key[0] >= " "]
    if not session_ids:
        return []
    if len(session_ids) == 1:
        rows = fastsql.rows(conn, _PARKED_OF_SESSION, {"sid": session_ids[0]})
    else:
        rows = list(conn.execute(_PARKED_OF_SESSIONS, {"sids": session_ids}))
    return [ParkedStep(*row) for row in rows]


def due_steps(
    conn: Connection, now: float, flow_types: Sequence[str], limit: int
) -> list[ParkedStep]:
    """Parked Steps of these flow types whose due time has come, earliest first."""
    params = {"now": now, "flow_types": list(flow_types), "limit": limit}
    return [ParkedStep(*row) for row in conn.execute(_DUE, params)]


def next_due(conn: Connection, flow_types: Sequence[str]) -> float | None:
    """The earliest due time of the parked Steps of these flow types."""
    value = conn.execute(_NEXT_DUE, {"flow_types": list(flow_types)}).scalar()
    return None if value is None else float(value)


def unpark_step(conn: Connection, parked: ParkedStep) -> bool:
    """Takes a parked Step out of its row for its next wake: True for exactly one caller,
    however many wake it at once (the row must still be parked with the same wake number)."""
    params = {
        "b_sid": parked.session_id,
        "b_sx": parked.step_execution_id,
        "b_wakes": parked.wakes,
        "status": "waiting",
        "wakes": parked.wakes + 1,
        "due": None,
    }
    return fastsql.execute(conn, _UNPARK, params) == 1


def step_history(conn: Connection, session_id: str) -> list[StepExecution]:
    query = sa.select(db.steps).where(db.steps.c.session_id == session_id).order_by(db.steps.c.seq)
    return [
        StepExecution(
            step_execution_id=row.step_execution_id,
            step_type=row.step_type,
            status=row.status,
            attempts=row.attempts,
            input=row.input,
            error=row.error,
            next_steps=json.loads(row.next_steps),
            scheduled_at=row.scheduled_at,
            started_at=row.started_at,
            ended_at=row.ended_at,
            recovery=None if row.recovery is None else json.loads(row.recovery),
        )
        for row in conn.execute(query)
    ]


# The events that end a turn, and the outcome each means.
TURN_END_STATUSES: dict[str, TurnStatus] = {
    "turn_completed": "completed",
    "turn_failed": "failed",
    "turn_steered": "steered",
    "turn_cancelled": "cancelled",
}
# The events after which a client waiting for a turn reads the session's events again: the
# turn's outcome, or an interrupt it waits on. The other events of a turn (deltas, tool calls,
# usage) wait for that read.
TURN_OUTCOME_EVENTS = frozenset({*TURN_END_STATUSES, "interrupt_raised"})


def control_wake_key(prefix: str, name: str) -> str:
    """A wake-up key that no session ID can be: `prefix`, a control character (session IDs
    hold none), then `name`, cut to the wake-up table's width. Two names cut to one key only
    wake each other's waits in vain."""
    return (prefix + name)[: db.WAKE_KEY_CHARS]


# What begins a queue's wake-up key.
QUEUE_KEY_PREFIX = "\x1f"
# The wake-up of a commit that parks a Step with a due time (`park_step`).
DUE_WAKE_KEY = control_wake_key("\x1d", "due")
# The wake-up of a commit that registers a Worker or stops one cleanly (`liveness.py`).
WORKERS_WAKE_KEY = control_wake_key("\x1d", "workers")


def queue_wake_key(flow_type: str) -> str:
    """The wake-up that tells the Workers hosting `flow_type` that its queue has Steps."""
    return control_wake_key(QUEUE_KEY_PREFIX, flow_type)


def turn_wake_key(session_id: str) -> str:
    """The wake-up of a commit that wrote one of `TURN_OUTCOME_EVENTS` for the session."""
    return control_wake_key(TURN_KEY_PREFIX, session_id)


def wake(conn: Connection, session_id: str) -> None:
    """Tells every process that waits on this session to look again once this transaction
    commits (`Database.write_sync` records one wake-up row, and on Postgres sends one NOTIFY,
    per woken session)."""
    conn.info.setdefault("dex_woken", set()).add(session_id)


# Built once: a wake-up feed runs these on every commit it sees.
_WAKEUPS_AFTER = (
    sa.select(
        db.wakeups.c.id,
        sa.case((db.wakeups.c.origin == sa.bindparam("origin"), ""), else_=db.wakeups.c.session_id),
    )
    .where(db.wakeups.c.id > sa.bindparam("after_id"))
    .order_by(db.wakeups.c.id)
    .limit(10_000)
)
_EVENTS_AFTER = (
    sa.select(db.events)
    .where(
        db.events.c.session_id == sa.bindparam("session_id"),
        db.events.c.offset > sa.bindparam("after"),
    )
    .order_by(db.events.c.offset)
    .limit(sa.bindparam("limit"))
)


def wakeups_after(conn: Connection, after_id: int, origin: str) -> list[tuple[int, str]]:
    """Wake-ups after `after_id` written by other processes (IDs of own ones come back with
    an empty session, so the reader still advances past them)."""
    rows = fastsql.rows(conn, _WAKEUPS_AFTER, {"origin": origin, "after_id": after_id})
    return [(row[0], row[1]) for row in rows]


def last_wakeup_id(conn: Connection) -> int:
    return int(conn.execute(sa.select(sa.func.max(db.wakeups.c.id))).scalar() or 0)


def prune_wakeups(conn: Connection, older_than_seconds: float) -> None:
    conn.execute(db.wakeups.delete().where(db.wakeups.c.created < time.time() - older_than_seconds))
