"""Built-in tool calls as RunModel's commit records them: ask_user goes to
AwaitQuestionAnswer, durable_wait to AwaitTimer, write_todos settles in the commit, and an
invalid call records failed at once. Built-ins need no approval and have the read effect."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from .. import store
from ..builtins import (
    PLANNING_TURN_REJECTION,
    WRITE_TODOS_CALLED_TWICE,
    AskUserArguments,
    BuiltInArgumentError,
    DurableWaitArguments,
    WriteTodosArguments,
    plan_after_write_todos,
    validate_built_in_call,
    write_todos_result,
)
from ..clock import after, now_text
from ..runner import DeferredToolCall
from ..stepkit import StepScope, StepTx, Successor
from ..types import AgentToolCall
from .common import finish_tool_call, raise_interrupt


def is_built_in(ctx: StepScope, tool_name: str) -> bool:
    """An enabled built-in name is reserved; a disabled one is an ordinary tool name."""
    return tool_name in ctx.flow.options.built_in_tools


def built_in_record(call: DeferredToolCall, turn_id: str, order: int) -> AgentToolCall:
    return AgentToolCall(
        tool_call_id=call.tool_call_id,
        turn_id=turn_id,
        tool_name=call.tool_name,
        arguments=call.arguments,
        effect="read",
        requires_approval=False,
        status="approved",
        deferral_order=order,
        tool_source_reference=call.tool_source_reference,
    )


def settle_planning_rejection(tx: StepTx, record: AgentToolCall) -> None:
    rejected = {"status": "rejected", "rejection_message": PLANNING_TURN_REJECTION}
    finish_tool_call(tx, record.model_copy(update=rejected))


def route_built_in(
    ctx: StepScope, tx: StepTx, record: AgentToolCall, write_todos_calls: int
) -> Successor | None:
    """Records a built-in call; returns the Step that waits for it, or None when it is final."""
    if record.tool_name == "write_todos" and write_todos_calls > 1:
        finish_tool_call(tx, _failed(record, WRITE_TODOS_CALLED_TWICE))
        return None
    limit = ctx.flow.options.max_durable_wait
    parsed = validate_built_in_call(
        record.tool_name,  # type: ignore[arg-type]
        record.arguments,
        max_wait_seconds=limit.total_seconds() if limit else None,
    )
    if isinstance(parsed, BuiltInArgumentError):
        finish_tool_call(tx, _failed(record, parsed.message))
        return None
    if isinstance(parsed, AskUserArguments):
        return _ask_user(ctx, tx, record, parsed)
    if isinstance(parsed, DurableWaitArguments):
        return _durable_wait(tx, record, parsed)
    _write_todos(tx, record, parsed)
    return None


def _failed(record: AgentToolCall, error: str) -> AgentToolCall:
    return record.model_copy(update={"status": "failed", "error": error})


def _ask_user(
    ctx: StepScope, tx: StepTx, record: AgentToolCall, parsed: AskUserArguments
) -> Successor:
    asking = record.model_copy(
        update={
            "status": "awaiting_answer",
            "input_question": parsed.question,
            "input_choices": list(parsed.choices),
            "input_allows_free_text": parsed.allows_free_text,
        }
    )
    store.save_tool_call(tx.conn, tx.session.session_id, asking)
    raise_interrupt(
        ctx,
        tx,
        record,
        question=parsed.question,
        choices=parsed.choices,
        allows_free_text=parsed.allows_free_text,
    )
    return ("AwaitQuestionAnswer", record.tool_call_id)


def _durable_wait(tx: StepTx, record: AgentToolCall, parsed: DurableWaitArguments) -> Successor:
    wait_until = after(timedelta(seconds=parsed.seconds))
    waiting = record.model_copy(update={"status": "waiting_for_timer", "wait_until": wait_until})
    store.save_tool_call(tx.conn, tx.session.session_id, waiting)
    tx.event(
        "timer_started",
        {"tool_call_id": record.tool_call_id, "wait_until": wait_until, "reason": parsed.reason},
    )
    return ("AwaitTimer", record.tool_call_id)


def _write_todos(tx: StepTx, record: AgentToolCall, parsed: WriteTodosArguments) -> None:
    """Replaces the plan in RunModel's own commit, so a plan written while the user steered
    still counts."""
    mode = tx.session.active_state.interaction_mode
    plan = plan_after_write_todos(tx.session.plan, parsed.todos, mode, now_text())
    tx.session.plan = plan
    tx.event(
        "plan_updated",
        {"revision": plan.revision, "status": plan.status, "task_count": len(plan.tasks)},
    )
    done = {"status": "succeeded", "output": write_todos_result(plan)}
    finish_tool_call(tx, record.model_copy(update=done))


def write_todos_count(ctx: StepScope, calls: Sequence[DeferredToolCall]) -> int:
    return sum(1 for c in calls if c.tool_name == "write_todos" and is_built_in(ctx, c.tool_name))
