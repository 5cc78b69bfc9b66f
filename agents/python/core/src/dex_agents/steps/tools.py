"""Tool Steps: one call each, the polls and cancellation of tasks, and their failure routes."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy.engine import Connection

from .. import store, texts
from ..clock import parse_time
from ..errors import RunnerUnavailableError
from ..policy import idempotency_key
from ..runner import (
    DeferredToolExecution,
    ToolExecutionError,
    ToolExecutionResult,
    ToolInputRequested,
    ToolStepsReadTurn,
    ToolTaskCancellation,
    ToolTaskCanceller,
    ToolTaskPending,
    ToolTaskPoll,
    ToolTaskPoller,
    ToolTaskStarted,
    WritesToolCallStarted,
)
from ..stepkit import (
    END,
    READY,
    NonRetryableError,
    StepContext,
    StepHandler,
    StepOptions,
    StepScope,
    StepTx,
    Transition,
    Wait,
    go,
)
from ..tool_context import running_tool
from ..types import AgentToolCall
from .common import (
    abandon_call,
    control_reason,
    final_status_for_effect,
    finish_tool_call,
    is_cancelled,
    load_record,
    no_heartbeat,
    poll_interval_seconds,
)
from .turns import LoadedTurn, load_turn, turn_context

if TYPE_CHECKING:
    from datetime import timedelta

    from ..flow import AgentSessionOptions

log = logging.getLogger("dex_agents.steps")


@dataclass(frozen=True)
class LoadedCall:
    """What CallTool's begin loads: the record, and the turn for a `ToolStepsReadTurn` runner."""

    record: AgentToolCall
    turn: LoadedTurn | None = None


@dataclass(frozen=True)
class ToolFailed:
    """A ToolExecutionError: a failure the model sees, never retried."""

    error: str


@dataclass(frozen=True)
class RunnerWasUnavailable:
    """The runner was not reached (RunnerUnavailableError): the call never started there."""

    error: str


# Backoff while a runner is unavailable: the first wait, and the longest.
RUNNER_RETRY_FIRST_SECONDS = 0.5
RUNNER_RETRY_MAX_SECONDS = 30.0
# The error of a tool Step whose runner was unavailable (the Step history shows it).
RUNNER_UNAVAILABLE_ERROR_PREFIX = "the call did not start (a new Step calls the runner again)"
# Per (session, tool call): how many times in a row this Worker found the runner unavailable.
_unavailable_streak: dict[tuple[str, str], int] = {}


# What a runner's tool method may return, and what a tool Step's Execute hands its commit.
RunnerOutcome = ToolExecutionResult | ToolInputRequested | ToolTaskStarted | ToolTaskPending
CallOutcome = RunnerOutcome | ToolFailed | RunnerWasUnavailable
PollOutcome = RunnerOutcome | ToolFailed


async def _after_runner_unavailable(
    ctx: StepScope, record: AgentToolCall, error: RunnerUnavailableError
) -> RunnerWasUnavailable:
    """Waits out the backoff, then hands the commit a result that schedules the call again.

    The commit ends the Step (`failed`, with the reason, for the history) and schedules a
    new one, instead of failing the attempt: no attempt is counted against the tool (a
    single-attempt tool would otherwise become outcome_unknown for a call that never ran)."""
    key = (ctx.session_id, record.tool_call_id)
    streak = _unavailable_streak.get(key, 0)
    _unavailable_streak[key] = streak + 1
    delay = min(RUNNER_RETRY_MAX_SECONDS, RUNNER_RETRY_FIRST_SECONDS * 2**streak)
    log.warning(
        "%s: the runner is unavailable, calling it again in %g s: %s",
        ctx.step_execution_id,
        delay,
        error,
    )
    await asyncio.sleep(delay)
    return RunnerWasUnavailable(str(error) or type(error).__name__)


def _unavailable_error(tx: StepTx, step_execution_id: str, result: RunnerWasUnavailable) -> str:
    """The error a Step whose runner was unavailable ends with; an earlier attempt's failure
    (a runner that died during the call, then was not reachable) stays in front of it."""
    text = f"{RUNNER_UNAVAILABLE_ERROR_PREFIX}: {result.error}"
    row = store.load_step(tx.conn, tx.session.session_id, step_execution_id)
    earlier = row.error if row is not None else None
    return f"{earlier}; then {text}" if earlier else text


def _tool_started_event(tx: StepTx, record: AgentToolCall) -> None:
    tx.event(
        "tool_call_started",
        {"tool_call_id": record.tool_call_id, "tool_name": record.tool_name},
        turn_id=record.turn_id,
    )


def _ask(record: AgentToolCall, request: ToolInputRequested) -> AgentToolCall:
    """A tool asked the user before taking effect: AwaitQuestionAnswer raises the question."""
    return record.model_copy(
        update={
            "status": "awaiting_answer",
            "input_continuation": request.continuation,
            "input_question": request.question,
            "input_choices": list(request.choices),
            "input_allows_free_text": request.allows_free_text,
            "task_answer_pending": False,
        }
    )


class CallTool(StepHandler[LoadedCall, CallOutcome]):
    """Runs one read or idempotent_write call; a crash runs it again with the same key."""

    step_type = "CallTool"
    options = StepOptions(max_attempts=3, failure_route="RecordToolFailure")
    has_execute = True

    def timeout(self, options: AgentSessionOptions) -> timedelta | None:
        return options.tool_call_timeout

    def begin(self, ctx: StepContext[LoadedCall], tx: StepTx) -> Transition | None:
        record = load_record(tx, ctx.id_input())
        if record is None or record.status != "approved":
            return END
        # Steering decides only before tool_call_started: a started tool runs to the end.
        reason = None if ctx.progress_started else control_reason(tx)
        if reason is not None:
            abandon_call(tx, record, reason)
            return END
        runner = ctx.flow.runner
        reads_turn = isinstance(runner, ToolStepsReadTurn) and runner.tool_steps_read_turn
        ctx.loaded = LoadedCall(record, load_turn(ctx, tx) if reads_turn else None)
        # The point of no return: from this commit on, the call may take effect.
        tx.mark_started()
        if not (isinstance(runner, WritesToolCallStarted) and runner.writes_tool_call_started):
            _tool_started_event(tx, record)
        return None

    async def execute(self, ctx: StepContext[LoadedCall]) -> CallOutcome:
        loaded = ctx.need_loaded()
        record = loaded.record
        runner = ctx.flow.runner
        writer = ctx.services.event_writer(ctx, record.turn_id)
        execution = DeferredToolExecution(
            flow_id=ctx.session_id,
            turn_id=record.turn_id,
            step_execution_id=ctx.step_execution_id,
            tool_call=record,
            idempotency_key=idempotency_key(ctx.session_id, record.turn_id, record.tool_call_id),
            attempt=ctx.attempt,
            events=writer,
            heartbeat=no_heartbeat,
            save_heartbeat_checkpoint=ctx.services.checkpoint_saver(ctx),
            heartbeat_checkpoint=ctx.checkpoint,
            input_answers=tuple(record.input_answers),
            supports_tool_tasks=isinstance(runner, ToolTaskPoller),
            turn=turn_context(ctx, loaded.turn, writer) if loaded.turn else None,
        )
        writer.start()
        try:
            with running_tool(execution):
                outcome = await runner.execute_deferred_tool_call(execution)
        except ToolExecutionError as error:
            return ToolFailed(str(error) or type(error).__name__)
        except RunnerUnavailableError as error:
            return await _after_runner_unavailable(ctx, record, error)
        finally:
            await writer.close()
        _unavailable_streak.pop((ctx.session_id, record.tool_call_id), None)
        return _checked_outcome(ctx, outcome, "execute_deferred_tool_call")

    def commit(self, ctx: StepContext[LoadedCall], tx: StepTx, result: CallOutcome) -> Transition:
        record = load_record(tx, ctx.id_input())
        if record is None or record.is_final:
            return END
        if isinstance(result, ToolTaskStarted):
            return self._task_started(ctx, tx, record, result)
        if isinstance(result, RunnerWasUnavailable):
            # The record stays approved; a new Step of this type calls the runner again. This
            # one ends failed, with the reason, so the history shows the call did not start.
            return Transition(
                next=[(self.step_type, record.tool_call_id)],
                error=_unavailable_error(tx, ctx.step_execution_id, result),
            )
        return record_outcome(tx, record, result)

    def _task_started(
        self,
        ctx: StepContext[LoadedCall],
        tx: StepTx,
        record: AgentToolCall,
        started: ToolTaskStarted,
    ) -> Transition:
        interval = poll_interval_seconds(started.poll_interval_seconds)
        problem = None
        if not isinstance(ctx.flow.runner, ToolTaskPoller):
            problem = "the tool started a task, but the runner does not implement poll_tool_task"
        elif not isinstance(started.task_id, str) or not started.task_id.strip():
            problem = "the tool started a task with a blank task_id"
        elif interval is None:
            problem = (
                f"the tool's task poll interval {started.poll_interval_seconds!r} is not a number"
            )
        if problem is not None:
            status = final_status_for_effect(record)
            finish_tool_call(tx, record.model_copy(update={"status": status, "error": problem}))
            return END
        waiting = record.model_copy(
            update={
                "status": "waiting_for_task",
                "task_id": started.task_id,
                "task_poll_interval_seconds": interval,
                "input_continuation": None,
            }
        )
        store.save_tool_call(tx.conn, ctx.session_id, waiting)
        tx.event(
            "tool_task_started",
            {
                "tool_call_id": record.tool_call_id,
                "tool_name": record.tool_name,
                "task_id": started.task_id,
            },
            turn_id=record.turn_id,
        )
        return go(("PollToolTask", record.tool_call_id))


class CallSingleAttemptTool(CallTool):
    """Runs one non_idempotent_write or unclassified call at most once."""

    step_type = "CallSingleAttemptTool"
    options = StepOptions(max_attempts=1, failure_route="RecordToolOutcomeUnknown")


def _checked_outcome(ctx: StepScope, outcome: object, method: str) -> RunnerOutcome:
    allowed = (ToolExecutionResult, ToolInputRequested, ToolTaskStarted, ToolTaskPending)
    if isinstance(outcome, ToolExecutionResult) and not (
        isinstance(outcome.output, str) and isinstance(outcome.framework_data, str | None)
    ):
        outcome = None
    if not isinstance(outcome, allowed):
        raise NonRetryableError(
            f"{type(ctx.flow.runner).__name__}.{method} returned {outcome!r}; it must return "
            "ToolExecutionResult(output: str, framework_data: str | None), ToolInputRequested or "
            "a task outcome"
        )
    return outcome


def record_outcome(
    tx: StepTx,
    record: AgentToolCall,
    result: RunnerOutcome | ToolFailed,
) -> Transition:
    """Records what a tool call or task poll returned; shared by CallTool and PollToolTask."""
    if isinstance(result, ToolFailed):
        finish_tool_call(tx, _done(record, status="failed", error=result.error))
        return END
    if isinstance(result, ToolExecutionResult):
        done = _done(
            record,
            status="succeeded",
            output=result.output,
            framework_data=result.framework_data,
        )
        finish_tool_call(tx, done)
        return END
    if isinstance(result, ToolInputRequested):
        store.save_tool_call(tx.conn, tx.session.session_id, _ask(record, result))
        return go(("AwaitQuestionAnswer", record.tool_call_id))
    raise NonRetryableError(f"unexpected tool outcome {result!r}")


def _done(record: AgentToolCall, **values: object) -> AgentToolCall:
    return record.model_copy(update={**values, "task_answer_pending": False})


class PollToolTask(StepHandler[AgentToolCall, PollOutcome]):
    """Polls a started task once per Step; steering never abandons it."""

    step_type = "PollToolTask"
    cancelled_by_cancel_turn = True
    options = StepOptions(max_attempts=3, waits=True)
    has_execute = True

    def timeout(self, options: AgentSessionOptions) -> timedelta | None:
        return options.tool_call_timeout

    def failure_route(self, ctx: StepContext[AgentToolCall], tx: StepTx) -> str | None:
        record = load_record(tx, ctx.id_input())
        return (
            "RecordToolFailure"
            if record and record.effect in ("read", "idempotent_write")
            else "RecordToolOutcomeUnknown"
        )

    def check(self, ctx: StepContext[AgentToolCall], conn: Connection) -> Wait:
        session = store.read_session(conn, ctx.session_id)
        record = store.load_tool_call(conn, ctx.session_id, ctx.id_input())
        if record is None or record.is_final or record.task_answer_pending or is_cancelled(session):
            return READY
        interval = record.task_poll_interval_seconds or 1
        due = parse_time(ctx.scheduled_at).timestamp() + interval
        return READY if due <= time.time() else Wait(False, due)

    def begin(self, ctx: StepContext[AgentToolCall], tx: StepTx) -> Transition | None:
        record = load_record(tx, ctx.id_input())
        if record is None or record.is_final:
            return END
        if is_cancelled(tx.session):
            return go(("FinishTurnCancellation", record.turn_id))
        ctx.loaded = record
        return None

    async def execute(self, ctx: StepContext[AgentToolCall]) -> PollOutcome:
        record = ctx.need_loaded()
        runner = ctx.flow.runner
        if not isinstance(runner, ToolTaskPoller):
            raise NonRetryableError("the runner does not implement poll_tool_task")
        writer = ctx.services.event_writer(ctx, record.turn_id)
        poll = ToolTaskPoll(
            flow_id=ctx.session_id,
            tool_call=record,
            idempotency_key=idempotency_key(ctx.session_id, record.turn_id, record.tool_call_id),
            attempt=ctx.attempt,
            input_answers=tuple(record.input_answers),
            events=writer,
            heartbeat=no_heartbeat,
            pending_answer=record.input_answers[-1] if record.task_answer_pending else None,
        )
        writer.start()
        try:
            outcome = await runner.poll_tool_task(poll)
        except ToolExecutionError as error:
            return ToolFailed(str(error) or type(error).__name__)
        finally:
            await writer.close()
        return _checked_outcome(ctx, outcome, "poll_tool_task")

    def commit(
        self, ctx: StepContext[AgentToolCall], tx: StepTx, result: PollOutcome
    ) -> Transition:
        record = load_record(tx, ctx.id_input())
        if record is None or record.is_final:
            return END
        if isinstance(result, ToolTaskPending):
            interval = poll_interval_seconds(result.poll_interval_seconds) or 1
            pending = record.model_copy(
                update={
                    "task_poll_interval_seconds": interval,
                    "input_continuation": result.continuation,
                    "task_answer_pending": False,
                }
            )
            store.save_tool_call(tx.conn, ctx.session_id, pending)
            return go(("PollToolTask", record.tool_call_id))
        if isinstance(result, ToolTaskStarted):
            raise NonRetryableError("poll_tool_task returned ToolTaskStarted")
        return record_outcome(tx, record, result)


class CancelToolTask(StepHandler[AgentToolCall, None]):
    """Asks the runner to cancel a task that cancel_turn abandoned, then records the call
    outcome_unknown: the task may have taken effect."""

    step_type = "CancelToolTask"
    options = StepOptions(max_attempts=3, failure_route="RecordToolOutcomeUnknown")
    has_execute = True

    def begin(self, ctx: StepContext[AgentToolCall], tx: StepTx) -> Transition | None:
        record = load_record(tx, ctx.id_input())
        if record is None or record.is_final:
            return END
        ctx.loaded = record
        return None

    async def execute(self, ctx: StepContext[AgentToolCall]) -> None:
        record = ctx.need_loaded()
        runner = ctx.flow.runner
        if isinstance(runner, ToolTaskCanceller):
            cancellation = ToolTaskCancellation(
                flow_id=ctx.session_id,
                tool_call=record,
                idempotency_key=idempotency_key(
                    ctx.session_id, record.turn_id, record.tool_call_id
                ),
                attempt=ctx.attempt,
                heartbeat=no_heartbeat,
            )
            await runner.cancel_tool_task(cancellation)

    def commit(self, ctx: StepContext[AgentToolCall], tx: StepTx, result: None) -> Transition:
        record = load_record(tx, ctx.id_input())
        if record is None or record.is_final:
            return END
        finish_tool_call(tx, cancelled_task_record(record))
        return END


def cancelled_task_record(record: AgentToolCall) -> AgentToolCall:
    return record.model_copy(
        update={
            "status": "outcome_unknown",
            "error": texts.CANCELLED_TASK_ERROR,
            "cancellation_reason": "turn_cancelled",
            "task_answer_pending": False,
        }
    )


class RecordToolFailure(StepHandler[None]):
    """Failure route of CallTool and PollToolTask: `failed` for a read, else outcome_unknown."""

    step_type = "RecordToolFailure"

    def commit(self, ctx: StepContext[None], tx: StepTx, result: None) -> Transition:
        record = load_record(tx, ctx.id_input())
        recovery = ctx.recovery
        if record is None or record.is_final or recovery is None:
            return END
        if record.task_id is not None and record.cancellation_reason == "turn_cancelled":
            finish_tool_call(tx, cancelled_task_record(record))
            return END
        if (
            recovery.attempt_progress == "NOT_STARTED"
            and record.status == "approved"
            and not record.input_answers
        ):
            error = f"{texts.TOOL_CALL_NOT_RUN_ERROR_PREFIX}: {recovery.detail}"
            finish_tool_call(tx, _done(record, status="failed", error=error))
            return END
        finish_tool_call(tx, _done(record, status=self.status_for(record), error=recovery.detail))
        return END

    def status_for(self, record: AgentToolCall) -> str:
        return final_status_for_effect(record)


class RecordToolOutcomeUnknown(RecordToolFailure):
    step_type = "RecordToolOutcomeUnknown"

    def status_for(self, record: AgentToolCall) -> str:
        return "outcome_unknown"
