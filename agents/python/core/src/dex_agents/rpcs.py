"""The contract's RPCs, one function each: the transaction `AgentClient` runs for it.

Each function takes an open transaction and arguments the client already validated, takes
the contract's locks (`store.lock_session`), and returns the RPC's result. A Step that an
RPC must start is enqueued through `enqueue` in the same transaction, so the RPC commits with
its Steps or not at all.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import Connection

from . import store, texts
from .clock import now_text, parse_time, utc_now
from .errors import ChannelMessageNotFoundError, SessionExistsError
from .store import (
    INTERRUPT_RESOLUTIONS,
    PLAN_EXECUTIONS,
    QUEUED_USER_MESSAGES,
    STEERED_USER_MESSAGES,
    TURN_CONTROL_REQUESTS,
    EventRecord,
)
from .types import (
    AgentInterrupt,
    AgentInterruptResolution,
    AgentMessagesPage,
    AgentSessionStartInput,
    AgentSnapshot,
    AgentUserMessage,
    PendingUserMessage,
    PlanExecutionRequest,
    QueuedUserMessage,
    ResumableSnapshot,
    TurnCancellationRequest,
)

# Enqueues a Step execution of a session on its flow type's queue, in the transaction.
Enqueue = Callable[[Connection, store.Session, str], None]


@functools.cache
def cancelled_by_cancel_turn() -> tuple[str, ...]:
    """The Steps cancel_turn stops, including a running attempt: a fact each Step type states.
    (The Step handlers load on first use: a process that only reads, such as `dex-agents
    history`, never imports them.)"""
    from .steps import STEP_HANDLERS

    handlers = STEP_HANDLERS.items()
    return tuple(step_type for step_type, handler in handlers if handler.cancelled_by_cancel_turn)


def __getattr__(name: str) -> object:
    if name == "CANCELLED_BY_CANCEL_TURN":  # its name before it loaded on first use
        return cancelled_by_cancel_turn()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def start_session(
    conn: Connection,
    session_id: str,
    flow_type: str,
    start: AgentSessionStartInput,
    enqueue: Enqueue,
) -> str:
    if store.session_exists(conn, session_id):
        raise SessionExistsError(f"a session with ID {session_id!r} already exists", "session_id")
    session = store.create_session(conn, session_id, flow_type, start)
    step = store.schedule_step(conn, session, "StartAgentSession", None).step_execution_id
    store.save_session(conn, session)
    enqueue(conn, session, step)
    return session_id


def send_user_message(
    conn: Connection, session_id: str, message: AgentUserMessage
) -> QueuedUserMessage | None:
    """Queues the message (blank text is refused before, without a lock). None where the RPC
    answers false: a plan-mode message to a session whose Flow does not enable plan mode.
    Otherwise the queued message's ID and the event offset after which the turn it begins
    can be found."""
    session = store.lock_session(conn, session_id)
    if message.plan_mode and not _plan_mode_enabled(session):
        return None
    queued = store.publish(conn, session_id, QUEUED_USER_MESSAGES, message.to_json())
    return QueuedUserMessage(message_id=str(queued), event_offset=session.event_counter)


def execute_plan(conn: Connection, session_id: str, revision: int) -> bool:
    session = store.lock_session(conn, session_id)
    state, plan = session.state, session.plan
    if state is None or state.active_turn_id is not None:
        return False
    if state.status != "waiting_for_user_message" or session.pending_interrupts:
        return False
    if plan is None or plan.revision != revision or plan.status not in ("draft", "active"):
        return False
    if session.pending_plan_execution is not None:
        return False
    for channel in (QUEUED_USER_MESSAGES, STEERED_USER_MESSAGES):
        if store.count(conn, session_id, channel):
            return False
    request = PlanExecutionRequest(revision=revision)
    session.pending_plan_execution = request
    store.publish(conn, session_id, PLAN_EXECUTIONS, request.to_json(), str(revision))
    store.save_session(conn, session)
    return True


def steer_user_message(
    conn: Connection, session_id: str, text: str | None, message_id: str | None
) -> bool:
    """Exactly one of `text` (not blank) and `message_id` is set (checked before)."""
    session = store.lock_session(conn, session_id)
    state = session.state
    active = state is not None and state.active_turn_id is not None
    if message_id is not None:
        queued = _queued_message(conn, session_id, message_id)
        if queued is None:
            return False
        if not active:
            return True  # a queued message stays queued
        assert state is not None
        if not state.accepts_turn_control:
            return False
        _take_queued(conn, queued)
        payload = queued.payload
    else:
        payload = AgentUserMessage(text=text or "").to_json()
        if not active:
            store.publish(conn, session_id, QUEUED_USER_MESSAGES, payload)
            return True
        assert state is not None
        if not state.accepts_turn_control:
            return False
    store.publish(conn, session_id, STEERED_USER_MESSAGES, payload)
    store.publish(conn, session_id, TURN_CONTROL_REQUESTS, '{"kind":"steer"}')
    return True


def delete_queued_message(conn: Connection, session_id: str, message_id: str) -> bool:
    store.lock_session(conn, session_id)
    queued = _queued_message(conn, session_id, message_id)
    if queued is None:
        return False
    _take_queued(conn, queued)
    return True


def cancel_turn(conn: Connection, session_id: str, turn_id: str | None, enqueue: Enqueue) -> bool:
    session = store.lock_session(conn, session_id)
    state = session.state
    if state is None or state.active_turn_id is None:
        return False
    if turn_id is not None and turn_id != state.active_turn_id:
        return False
    if not state.accepts_turn_control:
        return False
    request = session.turn_cancellation
    if request is not None and request.turn_id == state.active_turn_id:
        return True
    active = state.active_turn_id
    session.turn_cancellation = TurnCancellationRequest(turn_id=active, requested_at=now_text())
    for step in store.open_steps(conn, session_id, cancelled_by_cancel_turn()):
        store.update_step(
            conn, session_id, step.step_execution_id, status="cancelled", ended_at=now_text()
        )
    finish = store.schedule_step(conn, session, "FinishTurnCancellation", active).step_execution_id
    store.save_session(conn, session)
    store.wake(conn, session_id)
    enqueue(conn, session, finish)
    return True


def update_session_settings(
    conn: Connection, session_id: str, session_settings: dict[str, Any]
) -> bool:
    """`session_settings` passed the size and JSON checks ({} clears them)."""
    session = store.lock_session(conn, session_id)
    if session.state is None:
        return False
    session.session_settings = session_settings or None
    store.save_session(conn, session)
    return True


def resolve_interrupt(
    conn: Connection,
    session_id: str,
    interrupt_id: str,
    approved: bool,
    rejection_message: str | None,
) -> bool:
    session = store.lock_session(conn, session_id)
    interrupt = _pending_interrupt(session, interrupt_id)
    if interrupt is None or (interrupt.kind == "question" and approved):
        return False
    message = None if approved else rejection_message
    resolution = AgentInterruptResolution(approved=approved, rejection_message=message)
    from .steps.common import interrupt_resolved_payload

    payload = interrupt_resolved_payload(interrupt, approved=approved, rejection_message=message)
    _publish_resolution(conn, session, interrupt, resolution, payload)
    return True


def answer_question(conn: Connection, session_id: str, interrupt_id: str, answer: str) -> bool:
    session = store.lock_session(conn, session_id)
    interrupt = _pending_interrupt(session, interrupt_id)
    if interrupt is None or interrupt.kind != "question" or not answer.strip():
        return False
    if interrupt.choices and not interrupt.allows_free_text and answer not in interrupt.choices:
        return False
    resolution = AgentInterruptResolution(approved=True, answer=answer)
    from .steps.common import interrupt_resolved_payload

    payload = interrupt_resolved_payload(
        interrupt, approved=True, rejection_message=None, answered=True
    )
    _publish_resolution(conn, session, interrupt, resolution, payload)
    return True


def get_agent_snapshot(conn: Connection, session_id: str) -> AgentSnapshot:
    return _snapshot(conn, store.read_session(conn, session_id))


def get_agent_snapshot_with_resume_token(conn: Connection, session_id: str) -> ResumableSnapshot:
    """get_agent_snapshot in a transaction that sees one state of the database, with the
    offset of the last event that state holds."""
    store.consistent_read(conn)
    session = store.read_session(conn, session_id)
    return ResumableSnapshot(
        session_id=session_id,
        flow_type=session.flow_type,
        snapshot=_snapshot(conn, session),
        resume_token=session.event_counter,
    )


def _snapshot(conn: Connection, session: store.Session) -> AgentSnapshot:
    session_id = session.session_id
    queued = store.peek(conn, session_id, QUEUED_USER_MESSAGES)
    steered = store.peek(conn, session_id, STEERED_USER_MESSAGES)
    return AgentSnapshot(
        state=session.state,
        messages=store.messages_before(conn, session_id, None, texts.SNAPSHOT_MESSAGE_LIMIT),
        pending_interrupts=session.pending_interrupts,
        tool_calls=store.load_tool_calls(conn, session_id),
        usage=session.usage,
        queued_message_count=len(queued),
        plan=session.plan,
        queued_messages=[_pending_message(m) for m in queued],
        steered_messages=[_pending_message(m) for m in steered],
        context_summary=session.context_summary,
        session_settings=session.session_settings,
    )


def list_agent_messages(
    conn: Connection, session_id: str, before_sequence: int | None, limit: int
) -> AgentMessagesPage:
    """`limit` is already clamped to 1..LIST_MESSAGES_MAX_LIMIT."""
    store.read_session(conn, session_id)
    page = store.messages_before(conn, session_id, before_sequence, limit)
    first = store.first_message_sequence(conn, session_id) or 1
    starts_at_oldest = not page or page[0].sequence <= first
    return AgentMessagesPage(
        messages=page,
        next_before_sequence=None if starts_at_oldest else page[0].sequence,
        deleted_before_sequence=first if first > 1 else None,
    )


# Shared by the RPCs -----------------------------------------------------------------------


def _plan_mode_enabled(session: store.Session) -> bool:
    return bool((session.features or {}).get("plan_mode_enabled"))


def _pending_interrupt(session: store.Session, interrupt_id: str) -> AgentInterrupt | None:
    """The interrupt, while it is pending and its deadline has not passed."""
    interrupt = next(
        (i for i in session.pending_interrupts if i.interrupt_id == interrupt_id), None
    )
    if interrupt is None or _past(interrupt.deadline):
        return None
    return interrupt


def _publish_resolution(
    conn: Connection,
    session: store.Session,
    interrupt: AgentInterrupt,
    resolution: AgentInterruptResolution,
    payload: dict[str, Any],
) -> None:
    """Removes the interrupt and publishes its resolution, with interrupt_resolved, in one
    commit."""
    remaining = [i for i in session.pending_interrupts if i.interrupt_id != interrupt.interrupt_id]
    session.pending_interrupts = remaining
    store.publish(
        conn,
        session.session_id,
        INTERRUPT_RESOLUTIONS,
        resolution.to_json(),
        interrupt.interrupt_id,
    )
    turn_id = session.state.active_turn_id if session.state else None
    event = EventRecord("interrupt_resolved", turn_id, 1, payload, "")
    store.write_events(conn, session, [event])
    store.save_session(conn, session)


def _queued_message(
    conn: Connection, session_id: str, message_id: str
) -> store.ChannelMessage | None:
    if not message_id.isdigit():
        return None
    queued = store.peek(conn, session_id, QUEUED_USER_MESSAGES)
    return next((m for m in queued if m.message_id == int(message_id)), None)


def _take_queued(conn: Connection, message: store.ChannelMessage) -> None:
    if store.delete_channel_messages(conn, [message.message_id]) != 1:
        raise ChannelMessageNotFoundError(
            f"CHANNEL_MESSAGE_NOT_FOUND: queued message {message.message_id} was consumed"
        )


def _pending_message(message: store.ChannelMessage) -> PendingUserMessage:
    return PendingUserMessage(
        message_id=str(message.message_id),
        message=AgentUserMessage.model_validate_json(message.payload),
    )


def _past(deadline: str | None) -> bool:
    return deadline is not None and parse_time(deadline) <= utc_now()
