"""Steps that wait: for an approval, an answer, a timer, or every tool result of a turn.

ToolCallCancellations only wakes a waiting Step; the turn's flags decide. A woken Step whose
turn is neither steered nor cancelled waits again, and an answer that committed first wins.
"""

from __future__ import annotations

import json
import math

from sqlalchemy.engine import Connection

from .. import store, texts
from ..builtins import ask_user_result, durable_wait_result
from ..clock import parse_time, utc_now
from ..stepkit import (
    END,
    NOT_READY,
    READY,
    WAIT_AGAIN,
    StepContext,
    StepHandler,
    StepOptions,
    StepTx,
    Transition,
    Wait,
    go,
)
from ..store import (
    INTERRUPT_RESOLUTIONS,
    TOOL_CALL_CANCELLATIONS,
    TOOL_CALL_RESULTS,
    TURN_CONTROL_REQUESTS,
    Session,
)
from ..types import AgentInterrupt, AgentInterruptResolution, AgentToolCall, QuestionAnswer
from .common import (
    abandon_call,
    control_reason,
    deadline_epoch,
    deadline_passed,
    final_status_for_effect,
    finish_tool_call,
    interrupt_resolved_payload,
    is_cancelled,
    is_steered,
    load_record,
    may_abandon,
    pending_interrupt,
    pending_interrupt_of,
    question_interrupt_id,
    raise_interrupt,
    remove_interrupt,
    resolve_interrupt_for_cancellation,
    tool_step_type,
)


def _interrupt_wait(session: Session, interrupt_id: str) -> Wait:
    """Not ready until a wake, or until the pending interrupt's deadline."""
    interrupt = pending_interrupt(session, interrupt_id)
    if interrupt is None or interrupt.deadline is None:
        return NOT_READY
    due = deadline_epoch(interrupt.deadline)
    return READY if due <= utc_now().timestamp() else Wait(False, due)


def _woken(conn: Connection, session_id: str, channel: str, key: str) -> bool:
    return store.count(conn, session_id, channel, key) > 0


def _activated(tx: StepTx, record: AgentToolCall) -> AgentToolCall:
    """An approval's answer (or its deadline) starts an activation: with tracing on, the
    call's tool span joins the approval's own root instead of the model call's."""
    root = tx.activate()
    if root is None and record.trace_context is None:
        return record
    return record.model_copy(update={"trace_context": root})


class AwaitToolApproval(StepHandler[None]):
    step_type = "AwaitToolApproval"
    cancelled_by_cancel_turn = True
    options = StepOptions(waits=True)

    def check(self, ctx: StepContext[None], conn: Connection) -> Wait:
        call_id = ctx.id_input()
        if _woken(conn, ctx.session_id, INTERRUPT_RESOLUTIONS, call_id) or _woken(
            conn, ctx.session_id, TOOL_CALL_CANCELLATIONS, call_id
        ):
            return READY
        session = store.read_session(conn, ctx.session_id)
        if pending_interrupt(session, call_id) is None:
            record = store.load_tool_call(conn, ctx.session_id, call_id)
            return READY if record is None or record.status != "awaiting_approval" else NOT_READY
        return _interrupt_wait(session, call_id)

    def commit(self, ctx: StepContext[None], tx: StepTx, result: None) -> Transition:
        call_id = ctx.id_input()
        record = load_record(tx, call_id)
        if record is None or record.status != "awaiting_approval":
            return END
        taken = store.consume(tx.conn, ctx.session_id, INTERRUPT_RESOLUTIONS, call_id)
        if taken:  # an answer that committed first wins
            resolution = AgentInterruptResolution.model_validate_json(taken[0].payload)
            return self._apply(tx, _activated(tx, record), resolution)
        store.consume(tx.conn, ctx.session_id, TOOL_CALL_CANCELLATIONS, call_id)
        reason = control_reason(tx)
        if reason is not None:
            abandon_call(tx, record, reason)
            return END
        interrupt = pending_interrupt(tx.session, call_id)
        if interrupt is not None and deadline_passed(interrupt.deadline):
            record = _activated(tx, record)
            remove_interrupt(tx, interrupt)
            tx.event(
                "interrupt_resolved",
                interrupt_resolved_payload(
                    interrupt, approved=False, rejection_message=texts.APPROVAL_DEADLINE_PASSED
                ),
            )
            rejected = {"status": "rejected", "rejection_message": texts.APPROVAL_DEADLINE_PASSED}
            finish_tool_call(tx, record.model_copy(update=rejected))
            return END
        return WAIT_AGAIN

    @staticmethod
    def _apply(
        tx: StepTx, record: AgentToolCall, resolution: AgentInterruptResolution
    ) -> Transition:
        if resolution.approved:
            approved = record.model_copy(update={"status": "approved"})
            store.save_tool_call(tx.conn, tx.session.session_id, approved)
            return go((tool_step_type(record), record.tool_call_id))
        rejected = {"status": "rejected", "rejection_message": resolution.rejection_message}
        finish_tool_call(tx, record.model_copy(update=rejected))
        return END


class AwaitQuestionAnswer(StepHandler[None]):
    """Raises a tool's question (or ask_user's) and applies its answer, decline or deadline."""

    step_type = "AwaitQuestionAnswer"
    cancelled_by_cancel_turn = True
    options = StepOptions(waits=True)

    def check(self, ctx: StepContext[None], conn: Connection) -> Wait:
        record = store.load_tool_call(conn, ctx.session_id, ctx.id_input())
        if record is None or record.status != "awaiting_answer":
            return READY
        interrupt_id = question_interrupt_id(record)
        if _woken(conn, ctx.session_id, INTERRUPT_RESOLUTIONS, interrupt_id) or _woken(
            conn, ctx.session_id, TOOL_CALL_CANCELLATIONS, record.tool_call_id
        ):
            return READY
        session = store.read_session(conn, ctx.session_id)
        if pending_interrupt(session, interrupt_id) is None:
            return READY  # a question not raised yet: a zero timer
        if is_cancelled(session) and record.task_id is not None:
            return READY
        return _interrupt_wait(session, interrupt_id)

    def commit(self, ctx: StepContext[None], tx: StepTx, result: None) -> Transition:
        record = load_record(tx, ctx.id_input())
        if record is None or record.status != "awaiting_answer":
            return END
        interrupt_id = question_interrupt_id(record)
        taken = store.consume(tx.conn, ctx.session_id, INTERRUPT_RESOLUTIONS, interrupt_id)
        if taken:
            resolution = AgentInterruptResolution.model_validate_json(taken[0].payload)
            return self._apply(tx, record, interrupt_id, resolution)
        store.consume(tx.conn, ctx.session_id, TOOL_CALL_CANCELLATIONS, record.tool_call_id)
        reason = control_reason(tx)
        if reason == "turn_cancelled" and record.task_id is not None:
            return go(("FinishTurnCancellation", record.turn_id))
        if reason is not None and record.task_id is None:
            abandon_call(tx, record, reason)
            return END
        interrupt = pending_interrupt(tx.session, interrupt_id)
        if interrupt is None:
            return self._raise(ctx, tx, record, interrupt_id)
        if deadline_passed(interrupt.deadline):
            return self._deadline(tx, record, interrupt)
        return WAIT_AGAIN

    def _raise(
        self, ctx: StepContext[None], tx: StepTx, record: AgentToolCall, interrupt_id: str
    ) -> Transition:
        if self._interrupt_id_taken(tx, record, interrupt_id):
            error = (
                f"the tool's question cannot use interrupt ID {interrupt_id}, which another "
                "tool call of this turn uses"
            )
            status = final_status_for_effect(record) if record.task_id else "failed"
            finish_tool_call(tx, record.model_copy(update={"status": status, "error": error}))
            return END
        raise_interrupt(
            ctx,
            tx,
            record,
            interrupt_id=interrupt_id,
            question=record.input_question or "",
            choices=record.input_choices,
            allows_free_text=record.input_allows_free_text,
        )
        return WAIT_AGAIN

    @staticmethod
    def _interrupt_id_taken(tx: StepTx, record: AgentToolCall, interrupt_id: str) -> bool:
        if record.tool_call_id == interrupt_id:
            return False
        owner = pending_interrupt(tx.session, interrupt_id)
        if owner is not None and owner.tool_call_id != record.tool_call_id:
            return True
        return load_record(tx, interrupt_id) is not None

    def _apply(
        self,
        tx: StepTx,
        record: AgentToolCall,
        interrupt_id: str,
        resolution: AgentInterruptResolution,
    ) -> Transition:
        declined_text = resolution.rejection_message or texts.QUESTION_DECLINED
        if record.task_id is not None:
            kind = "answered" if resolution.approved else "declined"
            answer = (resolution.answer or "") if resolution.approved else declined_text
            return self._to_task(tx, record, interrupt_id, answer, kind)
        if not resolution.approved:
            rejected = {"status": "rejected", "rejection_message": declined_text}
            finish_tool_call(tx, record.model_copy(update=rejected))
            return END
        if record.tool_name == "ask_user" and interrupt_id == record.tool_call_id:
            output = ask_user_result(resolution.answer or "")
            finish_tool_call(
                tx, record.model_copy(update={"status": "succeeded", "output": output})
            )
            return END
        answered = record.model_copy(
            update={
                "status": "approved",
                "input_answers": [
                    *record.input_answers,
                    _answer(record, interrupt_id, resolution.answer or ""),
                ],
                "input_question": None,
                "input_choices": [],
            }
        )
        store.save_tool_call(tx.conn, tx.session.session_id, answered)
        return go((tool_step_type(record), record.tool_call_id))

    def _deadline(self, tx: StepTx, record: AgentToolCall, interrupt: AgentInterrupt) -> Transition:
        remove_interrupt(tx, interrupt)
        tx.event(
            "interrupt_resolved",
            interrupt_resolved_payload(
                interrupt, approved=False, rejection_message=texts.QUESTION_DEADLINE_PASSED
            ),
        )
        if record.task_id is not None:
            return self._to_task(
                tx,
                record,
                interrupt.interrupt_id,
                texts.QUESTION_DEADLINE_PASSED,
                "deadline_passed",
            )
        rejected = {"status": "rejected", "rejection_message": texts.QUESTION_DEADLINE_PASSED}
        finish_tool_call(tx, record.model_copy(update=rejected))
        return END

    @staticmethod
    def _to_task(
        tx: StepTx, record: AgentToolCall, interrupt_id: str, answer: str, resolution: str
    ) -> Transition:
        """A started task's question never ends the call here: PollToolTask hands the
        resolution to the task."""
        entry = _answer(record, interrupt_id, answer).model_copy(update={"resolution": resolution})
        waiting = record.model_copy(
            update={
                "status": "waiting_for_task",
                "input_answers": [*record.input_answers, entry],
                "task_answer_pending": True,
            }
        )
        store.save_tool_call(tx.conn, tx.session.session_id, waiting)
        return go(("PollToolTask", record.tool_call_id))


def _answer(record: AgentToolCall, interrupt_id: str, answer: str) -> QuestionAnswer:
    return QuestionAnswer(
        interrupt_id=interrupt_id, question=record.input_question or "", answer=answer
    )


class AwaitTimer(StepHandler[None]):
    """durable_wait: the Timer is the authority; a steer abandons only an unfinished wait."""

    step_type = "AwaitTimer"
    cancelled_by_cancel_turn = True
    options = StepOptions(waits=True)

    def check(self, ctx: StepContext[None], conn: Connection) -> Wait:
        record = store.load_tool_call(conn, ctx.session_id, ctx.id_input())
        if record is None or record.status != "waiting_for_timer" or record.wait_until is None:
            return READY
        due = float(math.ceil(parse_time(record.wait_until).timestamp()))
        if due <= utc_now().timestamp():
            return READY
        if _woken(conn, ctx.session_id, TOOL_CALL_CANCELLATIONS, record.tool_call_id):
            return READY
        return Wait(False, due)

    def commit(self, ctx: StepContext[None], tx: StepTx, result: None) -> Transition:
        record = load_record(tx, ctx.id_input())
        if record is None or record.status != "waiting_for_timer" or record.wait_until is None:
            return END
        if parse_time(record.wait_until) <= utc_now():  # Timers are selected before Channels
            # Measured from when the wait began: a Worker restart does not restart it.
            arguments = json.loads(record.arguments)
            began = parse_time(record.wait_until).timestamp() - float(arguments["seconds"])
            waited = max(0, round(utc_now().timestamp() - began))
            output = durable_wait_result(waited, str(arguments.get("reason", "")))
            finish_tool_call(
                tx, record.model_copy(update={"status": "succeeded", "output": output})
            )
            return END
        store.consume(tx.conn, ctx.session_id, TOOL_CALL_CANCELLATIONS, record.tool_call_id)
        reason = control_reason(tx)
        if reason is not None:
            abandon_call(tx, record, reason)
            return END
        return WAIT_AGAIN


class ResumeTurn(StepHandler[None]):
    """Waits for every tool result of the turn, then resumes the model; a control wake in a
    steered turn abandons the waiting calls that have taken no effect."""

    step_type = "ResumeTurn"
    options = StepOptions(waits=True)

    def check(self, ctx: StepContext[None], conn: Connection) -> Wait:
        if store.count(conn, ctx.session_id, TURN_CONTROL_REQUESTS):
            return READY
        expected = ctx.count_input()
        return (
            READY if store.count(conn, ctx.session_id, TOOL_CALL_RESULTS) >= expected else NOT_READY
        )

    def commit(self, ctx: StepContext[None], tx: StepTx, result: None) -> Transition:
        state = tx.session.active_state
        if state.active_turn_id is None:
            return END
        woken = store.consume(tx.conn, ctx.session_id, TURN_CONTROL_REQUESTS, limit=texts.MAX_INT32)
        if woken and is_steered(tx) and not is_cancelled(tx.session):
            self._abandon_waiting_calls(tx)
        expected = ctx.count_input()
        if store.count(tx.conn, ctx.session_id, TOOL_CALL_RESULTS) < expected:
            return WAIT_AGAIN
        store.consume(tx.conn, ctx.session_id, TOOL_CALL_RESULTS, limit=expected)
        records = store.load_tool_calls(tx.conn, ctx.session_id)
        unfinished = sum(1 for r in records if not r.is_final)
        if unfinished:
            # A consumed result belonged to an earlier turn: wait for the rest.
            return go(("ResumeTurn", unfinished))
        if control_reason(tx) is not None:
            return go(("ApplyTurnControl", None))
        tx.session.state = state.model_copy(update={"status": "running_model"})
        return go(("RunModel", None))

    @staticmethod
    def _abandon_waiting_calls(tx: StepTx) -> None:
        """Removes the interrupts of calls that took no effect and wakes their Steps, which
        record them; ResumeTurn never writes a record."""
        for record in store.load_tool_calls(tx.conn, tx.session.session_id):
            if not may_abandon(record):
                continue
            interrupt = pending_interrupt_of(tx.session, record)
            if interrupt is not None:
                resolve_interrupt_for_cancellation(tx, interrupt, "steered")
            tx.publish(TOOL_CALL_CANCELLATIONS, '{"reason":"steered"}', record.tool_call_id)
