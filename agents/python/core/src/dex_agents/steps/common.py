"""What several Steps share: turn flags, the abandonment predicate, final records, interrupts."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import replace

from .. import store, texts
from ..clock import after, now_text, parse_time, utc_now
from ..policy import EFFECT_TABLE
from ..results import model_visible_result, sendable_record, user_message_as_sent
from ..runner import FrameworkMessage
from ..stepkit import NonRetryableError, StepScope, StepTx
from ..store import STEERED_USER_MESSAGES, TOOL_CALL_RESULTS, Session
from ..types import AgentInterrupt, AgentToolCall, AgentUsage, CancellationReason

ONE_DAY_SECONDS = 86_400


# Turn flags: every boundary decides from committed state only --------------------------------


def is_cancelled(session: Session) -> bool:
    request = session.turn_cancellation
    state = session.state
    return (
        request is not None
        and state is not None
        and state.active_turn_id is not None
        and request.turn_id == state.active_turn_id
    )


def is_steered(tx: StepTx) -> bool:
    return store.count(tx.conn, tx.session.session_id, STEERED_USER_MESSAGES) > 0


def control_reason(tx: StepTx) -> CancellationReason | None:
    """Why the active turn must stop at this boundary; a turn both cancelled and steered ends
    as cancelled (its steered messages then start the next turn)."""
    if is_cancelled(tx.session):
        return "turn_cancelled"
    if is_steered(tx):
        return "steered"
    return None


def rejection_for(reason: CancellationReason) -> str:
    return texts.TURN_CANCELLED_REJECTION if reason == "turn_cancelled" else texts.STEERED_REJECTION


def may_abandon(record: AgentToolCall) -> bool:
    """The one predicate: a waiting call may be abandoned only while it has taken no effect.
    A record with a task belongs to remote work that started and is never abandoned."""
    if record.status == "awaiting_approval" or record.status == "waiting_for_timer":
        return True
    return record.status == "awaiting_answer" and record.task_id is None


# Tool call records ----------------------------------------------------------------------------


def finish_tool_call(tx: StepTx, record: AgentToolCall) -> None:
    """Saves a final record and publishes its one ToolCallCompleted, in the same commit."""
    assert record.is_final, record.status
    store.save_tool_call(tx.conn, tx.session.session_id, record)
    tx.publish(TOOL_CALL_RESULTS, json.dumps({"tool_call_id": record.tool_call_id}))
    tx.event(
        "tool_call_finished",
        {
            "tool_call_id": record.tool_call_id,
            "tool_name": record.tool_name,
            "status": record.status,
        },
        turn_id=record.turn_id,
    )


def abandon_call(tx: StepTx, record: AgentToolCall, reason: CancellationReason) -> None:
    """Records a call that never took effect as rejected by steering or cancel_turn."""
    interrupt = pending_interrupt_of(tx.session, record)
    if interrupt is not None:
        resolve_interrupt_for_cancellation(tx, interrupt, reason)
    finish_tool_call(
        tx,
        record.model_copy(
            update={
                "status": "rejected",
                "rejection_message": rejection_for(reason),
                "cancellation_reason": reason,
            }
        ),
    )


def final_status_for_effect(record: AgentToolCall, read_status: str = "failed") -> str:
    return read_status if record.effect == "read" else "outcome_unknown"


def tool_step_type(record: AgentToolCall) -> str:
    return EFFECT_TABLE[record.effect].step_type


def load_record(tx: StepTx, tool_call_id: str) -> AgentToolCall | None:
    return store.load_tool_call(tx.conn, tx.session.session_id, tool_call_id)


def poll_interval_seconds(value: object) -> int | None:
    """A task's poll interval, rounded up to whole seconds from 1 to a day; None when the
    value is not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        return None
    return int(min(max(math.ceil(value), 1), ONE_DAY_SECONDS))


# Interrupts -----------------------------------------------------------------------------------


def question_interrupt_id(record: AgentToolCall) -> str:
    """ask_user uses the call's ID; a tool's n-th question `<id>-input-<n>`."""
    if record.tool_name == "ask_user" and record.task_id is None and not record.input_continuation:
        return record.tool_call_id
    return f"{record.tool_call_id}-input-{len(record.input_answers) + 1}"


def pending_interrupt(session: Session, interrupt_id: str) -> AgentInterrupt | None:
    return next((i for i in session.pending_interrupts if i.interrupt_id == interrupt_id), None)


def pending_interrupt_of(session: Session, record: AgentToolCall) -> AgentInterrupt | None:
    return next(
        (i for i in session.pending_interrupts if i.tool_call_id == record.tool_call_id), None
    )


def raise_interrupt(
    ctx: StepScope,
    tx: StepTx,
    record: AgentToolCall,
    *,
    interrupt_id: str | None = None,
    question: str | None = None,
    choices: Sequence[str] = (),
    allows_free_text: bool = True,
) -> None:
    """Adds a pending approval (no question) or question for a record, with the Flow's
    interrupt deadline, and writes interrupt_raised."""
    deadline = ctx.flow.options.interrupt_deadline
    interrupt = AgentInterrupt(
        interrupt_id=interrupt_id or record.tool_call_id,
        kind="tool_approval" if question is None else "question",
        tool_call_id=record.tool_call_id,
        tool_name=record.tool_name,
        arguments=record.arguments,
        created_at=now_text(),
        deadline=after(deadline) if deadline else None,
        question=question,
        choices=list(choices),
        allows_free_text=allows_free_text,
    )
    tx.session.pending_interrupts = [*tx.session.pending_interrupts, interrupt]
    tx.event("interrupt_raised", interrupt_raised_payload(interrupt))


def remove_interrupt(tx: StepTx, interrupt: AgentInterrupt) -> None:
    remaining = [
        i for i in tx.session.pending_interrupts if i.interrupt_id != interrupt.interrupt_id
    ]
    tx.session.pending_interrupts = remaining


def resolve_interrupt_for_cancellation(
    tx: StepTx, interrupt: AgentInterrupt, reason: CancellationReason
) -> None:
    remove_interrupt(tx, interrupt)
    tx.event(
        "interrupt_resolved",
        interrupt_resolved_payload(
            interrupt,
            approved=False,
            rejection_message=rejection_for(reason),
            cancellation_reason=reason,
        ),
    )


def interrupt_raised_payload(interrupt: AgentInterrupt) -> dict[str, object]:
    return {
        "interrupt_id": interrupt.interrupt_id,
        "tool_call_id": interrupt.tool_call_id,
        "tool_name": interrupt.tool_name,
        "deadline": interrupt.deadline,
        "kind": interrupt.kind,
        "question": interrupt.question,
        "choices": interrupt.choices,
        "allows_free_text": interrupt.allows_free_text,
    }


def interrupt_resolved_payload(
    interrupt: AgentInterrupt,
    *,
    approved: bool,
    rejection_message: str | None,
    answered: bool = False,
    cancellation_reason: str | None = None,
) -> dict[str, object]:
    return {
        "interrupt_id": interrupt.interrupt_id,
        "approved": approved,
        "rejection_message": rejection_message,
        "kind": interrupt.kind,
        "answered": answered,
        "cancellation_reason": cancellation_reason,
    }


def deadline_passed(deadline: str | None) -> bool:
    return deadline is not None and parse_time(deadline) <= utc_now()


def deadline_epoch(deadline: str) -> float:
    """Timers take whole seconds: a deadline is rounded up to the next whole second."""
    return float(math.ceil(parse_time(deadline).timestamp()))


# Messages and usage ---------------------------------------------------------------------------


def build_user_item(ctx: StepScope, text: str) -> FrameworkMessage:
    """The runner's message for a user text; the framework gets the text as a model can be
    sent it (`sendable_text`), the stored message keeps the text as it was."""
    item = user_message_as_sent(ctx.flow.runner.build_user_message, text)
    if not isinstance(item, FrameworkMessage) or item.role != "user":
        raise NonRetryableError(
            f"{type(ctx.flow.runner).__name__}.build_user_message must return a "
            f"FrameworkMessage with role 'user', not {item!r}"
        )
    return item


def checked_messages(
    ctx: StepScope, items: Sequence[object], records: Sequence[AgentToolCall] = ()
) -> list[FrameworkMessage]:
    """The runner's messages, checked; a tool message whose output is the result the runner
    got `sendable_record`'s way (`records`: the turn's) stores the result as the call
    returned it. The model was sent U+FFFD; the session keeps the text."""
    by_id = {record.tool_call_id: record for record in records}
    checked: list[FrameworkMessage] = []
    for item in items:
        if (
            not isinstance(item, FrameworkMessage)
            or item.role not in ("user", "assistant", "tool")
            or not isinstance(item.framework_item, str)
        ):
            raise NonRetryableError(
                f"{type(ctx.flow.runner).__name__} returned a message that is not a "
                f"FrameworkMessage with a user, assistant or tool role and a string "
                f"framework_item: {item!r}"
            )
        checked.append(_as_returned(item, by_id.get(item.tool_call_id or "")))
    return checked


def _as_returned(item: FrameworkMessage, record: AgentToolCall | None) -> FrameworkMessage:
    if record is None or item.role != "tool" or not record.is_final:
        return item
    sendable = sendable_record(record)
    if sendable is record or item.tool_output != model_visible_result(sendable):
        return item
    return replace(item, tool_output=model_visible_result(record))


def record_usage(tx: StepTx, usage: AgentUsage | None) -> None:
    if usage is None:
        return
    if usage.model_calls == 0:
        usage = usage.model_copy(update={"model_calls": 1})
    total = tx.session.usage.plus(usage)
    tx.session.usage = total
    tx.event("usage_recorded", {"recorded": usage.model_dump(), "session": total.model_dump()})


def no_heartbeat() -> None:
    """Attempts are fenced by the Step-execution row, so a heartbeat has nothing to renew."""


def settings_problem(settings: object, limit: int | None = None) -> str | None:
    """Why settings are refused: not a JSON object, or compact UTF-8 JSON over `limit` bytes
    (the session's own check, which accepts the tolerance over what Clients allow)."""
    if not isinstance(settings, dict):
        return "session_settings must be a JSON object"
    if limit is None:
        limit = texts.MAX_SESSION_SETTINGS_BYTES + texts.SESSION_SETTINGS_SIZE_TOLERANCE_BYTES
    size = len(json.dumps(settings, separators=(",", ":"), ensure_ascii=False).encode())
    if size > limit:
        return f"session_settings are {size:,} bytes, over the limit of {limit:,}"
    return None
