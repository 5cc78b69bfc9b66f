"""The Session Flow's Steps: the turn loop of the spec, one handler per Step type."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from sqlalchemy.engine import Connection

from . import store, texts
from .clock import after, now_text, parse_time, utc_now
from .events import StreamingEventWriter
from .policy import EFFECT_TABLE, idempotency_key, resolve_tool_policy, tool_call_id_problem
from .results import tool_calls_note
from .runner import (
    AgentTurnContext,
    DeferredToolCall,
    DeferredToolExecution,
    FrameworkMessage,
    ToolCallsRequested,
    ToolExecutionError,
    ToolExecutionResult,
    TurnCompleted,
    TurnContinued,
    UnfinishedTurnMessageBuilder,
)
from .stepkit import (
    END,
    NOT_READY,
    READY,
    WAIT_AGAIN,
    NonRetryableError,
    StepContext,
    StepHandler,
    StepOptions,
    StepTx,
    Transition,
    Wait,
    go,
)
from .store import (
    INTERRUPT_RESOLUTIONS,
    QUEUED_USER_MESSAGES,
    TOOL_CALL_CANCELLATIONS,
    TOOL_CALL_RESULTS,
    TURN_CONTROL_REQUESTS,
    Session,
)
from .types import (
    AgentInterrupt,
    AgentInterruptResolution,
    AgentState,
    AgentToolCall,
    AgentUsage,
    AgentUserMessage,
    InteractionMode,
    TurnReplySequence,
    TurnSessionSettings,
)

log = logging.getLogger("dex_agents")


# Turn boundaries ---------------------------------------------------------------------------


def build_user_item(ctx: StepContext, text: str) -> FrameworkMessage:
    item = ctx.flow.runner.build_user_message(text)
    if not isinstance(item, FrameworkMessage) or item.role != "user":
        raise NonRetryableError(
            f"{type(ctx.flow.runner).__name__}.build_user_message must return a "
            f"FrameworkMessage with role 'user', not {item!r}"
        )
    return item


def begin_turn(
    ctx: StepContext, tx: StepTx, messages: Sequence[AgentUserMessage], mode: InteractionMode
) -> Transition:
    session = tx.session
    state = session.active_state
    turn_id = f"turn-{state.turn_count + 1}"
    items = [build_user_item(ctx, message.text) for message in messages]
    stored = store.append_messages(tx.conn, session, turn_id, items)
    state = session.active_state
    session.set(
        "state",
        state.model_copy(
            update={
                "status": "running_model",
                "active_turn_id": turn_id,
                "interaction_mode": mode,
                "accepts_turn_control": False,
            }
        ),
    )
    session.set(
        "turn_reply_sequence",
        TurnReplySequence(turn_id=turn_id, sequence=state.next_message_sequence),
    )
    session.set(
        "turn_session_settings",
        TurnSessionSettings(turn_id=turn_id, session_settings=session.session_settings or {}),
    )
    tx.event("turn_started", {"sequence": stored[0].sequence}, turn_id=turn_id)
    return go(("RunModel", None))


def turn_message_count(session: Session) -> int:
    state = session.active_state
    reply = session.turn_reply_sequence
    if reply is None or reply.turn_id != state.active_turn_id:
        return 0
    return state.next_message_sequence - reply.sequence


def end_turn(tx: StepTx, *, error: str | None = None) -> None:
    """Clears the turn: its records, run state, interrupts and leftover results."""
    session = tx.session
    state = session.active_state
    session.set(
        "state",
        state.model_copy(
            update={
                "status": "waiting_for_user_message",
                "active_turn_id": None,
                "turn_count": state.turn_count + 1,
                "accepts_turn_control": False,
                "last_turn_error": error,
            }
        ),
    )
    store.delete_tool_calls(tx.conn, session.session_id)
    store.clear_channel(tx.conn, session.session_id, TOOL_CALL_RESULTS)
    session.set("framework_run_state", None)
    session.set("pending_interrupts", [])


def record_usage(tx: StepTx, usage: AgentUsage | None) -> None:
    if usage is None:
        return
    if usage.model_calls == 0:
        usage = usage.model_copy(update={"model_calls": 1})
    total = tx.session.usage.plus(usage)
    tx.session.set("usage", total)
    tx.event(
        "usage_recorded",
        {"recorded": usage.model_dump(), "session": total.model_dump()},
    )


def finish_tool_call(tx: StepTx, record: AgentToolCall) -> None:
    """Saves a final record and publishes its one ToolCallCompleted, in the same commit."""
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


def tool_step_type(record: AgentToolCall) -> str:
    return EFFECT_TABLE[record.effect].step_type


# StartAgentSession, AwaitUserMessage --------------------------------------------------------


def settings_problem(settings: Any) -> str | None:
    if not isinstance(settings, dict):
        return "session_settings must be a JSON object"
    size = len(json.dumps(settings, separators=(",", ":"), ensure_ascii=False).encode())
    limit = texts.MAX_SESSION_SETTINGS_BYTES + texts.SESSION_SETTINGS_SIZE_TOLERANCE_BYTES
    if size > limit:
        return f"session_settings are {size} bytes, over the limit of {limit}"
    return None


class StartAgentSession(StepHandler):
    step_type = "StartAgentSession"

    def commit(self, ctx: StepContext, tx: StepTx, result: Any) -> Transition:
        session = tx.session
        if session.state is not None:
            return END
        start = session.start_input
        settings = start.session_settings
        if settings is not None and settings_problem(settings):
            reason = f"{texts.SESSION_SETTINGS_INVALID}: {settings_problem(settings)}"
            session.set("state", AgentState(status="failed", last_turn_error=reason))
            return END
        session.set("state", AgentState())
        session.set("pending_interrupts", [])
        session.set("usage", AgentUsage())
        if settings:
            session.set("session_settings", settings)
        if start.initial_message and start.initial_message.strip():
            return begin_turn(ctx, tx, [AgentUserMessage(text=start.initial_message)], "chat")
        return go(("AwaitUserMessage", None))


class AwaitUserMessage(StepHandler):
    step_type = "AwaitUserMessage"
    options = StepOptions(waits=True)

    def check(self, ctx: StepContext, conn: Connection) -> Wait:
        if store.count(conn, ctx.session_id, QUEUED_USER_MESSAGES):
            return READY
        return NOT_READY

    def commit(self, ctx: StepContext, tx: StepTx, result: Any) -> Transition:
        state = tx.session.active_state
        if state.status == "failed" or state.active_turn_id is not None:
            return END
        taken = store.consume(tx.conn, ctx.session_id, QUEUED_USER_MESSAGES)
        if not taken:
            return WAIT_AGAIN
        message = AgentUserMessage.model_validate_json(taken[0].payload)
        return begin_turn(ctx, tx, [message], "chat")


# RunModel -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TurnSnapshot:
    turn_id: str
    context: AgentTurnContext
    writer: StreamingEventWriter


class RunModel(StepHandler):
    step_type = "RunModel"
    has_execute = True

    options = StepOptions(max_attempts=3, failure_route="RecordTurnFailure")
    timeout_option = "model_call_timeout"

    def begin(self, ctx: StepContext, tx: StepTx) -> Transition | None:
        session = tx.session
        state = session.active_state
        if state.active_turn_id is None:
            return END
        if ctx.loaded is None or ctx.loaded["turn_id"] != state.active_turn_id:
            ctx.loaded = {
                "turn_id": state.active_turn_id,
                "messages": ctx.runtime.messages.load(
                    tx.conn, ctx.session_id, state.next_message_sequence - 1
                ),
                "run_state": session.framework_run_state,
                "tool_calls": store.load_tool_calls(tx.conn, ctx.session_id),
                "settings": session.turn_settings(),
                "mode": state.interaction_mode,
                "plan": session.plan,
                "summary": session.context_summary,
            }
        return None

    async def execute(self, ctx: StepContext) -> Any:
        loaded = ctx.loaded
        writer = ctx.runtime.event_writer(ctx, loaded["turn_id"])
        options = ctx.flow.options
        turn = AgentTurnContext(
            flow_id=ctx.session_id,
            turn_id=loaded["turn_id"],
            attempt=ctx.attempt,
            step_execution_id=ctx.step_execution_id,
            messages=loaded["messages"],
            framework_run_state=loaded["run_state"],
            tool_calls=loaded["tool_calls"],
            events=writer,
            heartbeat=_no_heartbeat,
            tool_policies=options.tool_policies,
            default_tool_effect=options.default_tool_effect,
            enabled_built_in_tools=tuple(options.built_in_tools),
            session_settings=loaded["settings"],
            interaction_mode=loaded["mode"],
            plan=loaded["plan"],
            context_summary=loaded["summary"],
        )
        writer.start()
        try:
            outcome = await ctx.flow.runner.run_model_step(turn)
        finally:
            await writer.close()
        if not isinstance(outcome, TurnCompleted | ToolCallsRequested | TurnContinued):
            raise NonRetryableError(
                f"{type(ctx.flow.runner).__name__}.run_model_step returned "
                f"{type(outcome).__name__}; it must return TurnCompleted, ToolCallsRequested "
                "or TurnContinued"
            )
        return outcome

    def commit(self, ctx: StepContext, tx: StepTx, result: Any) -> Transition:
        state = tx.session.active_state
        if state.active_turn_id != ctx.loaded["turn_id"]:
            return END
        record_usage(tx, result.usage)
        if isinstance(result, TurnCompleted):
            return self._complete(ctx, tx, result)
        if isinstance(result, TurnContinued):
            turn_id: str = ctx.loaded["turn_id"]
            store.append_messages(tx.conn, tx.session, turn_id, result.new_messages)
            tx.session.set("framework_run_state", result.framework_run_state)
            return go(("RunModel", None))
        return self._request_tools(ctx, tx, result)

    def _complete(self, ctx: StepContext, tx: StepTx, result: TurnCompleted) -> Transition:
        session = tx.session
        turn_id = session.active_state.active_turn_id
        assert turn_id is not None
        store.append_messages(
            tx.conn, session, turn_id, _checked_messages(ctx, result.new_messages)
        )
        message_count = turn_message_count(session)
        end_turn(tx, error=result.turn_error)
        if result.turn_error:
            tx.event("turn_failed", {"error": result.turn_error}, turn_id=turn_id)
        else:
            tx.event("turn_completed", {"message_count": message_count}, turn_id=turn_id)
        return go(("AwaitUserMessage", None))

    def _request_tools(
        self, ctx: StepContext, tx: StepTx, result: ToolCallsRequested
    ) -> Transition:
        session = tx.session
        turn_id = session.active_state.active_turn_id
        assert turn_id is not None
        problem = self._tool_calls_problem(ctx, tx, result)
        if problem is not None:
            end_turn(tx, error=problem)
            tx.event("turn_failed", {"error": problem}, turn_id=turn_id)
            return go(("AwaitUserMessage", None))
        store.append_messages(
            tx.conn, session, turn_id, _checked_messages(ctx, result.new_messages)
        )
        session.set("framework_run_state", result.framework_run_state)
        existing = store.load_tool_calls(tx.conn, ctx.session_id)
        next_steps: list[tuple[str, Any]] = []
        for order, call in enumerate(result.tool_calls, start=len(existing)):
            record = self._record(ctx, call, turn_id, order)
            store.insert_tool_call(tx.conn, ctx.session_id, record)
            tx.event(
                "tool_call_deferred",
                {
                    "tool_call_id": record.tool_call_id,
                    "tool_name": record.tool_name,
                    "effect": record.effect,
                    "requires_approval": record.requires_approval,
                },
            )
            if record.requires_approval:
                self._raise_approval(ctx, tx, record)
                next_steps.append(("AwaitToolApproval", record.tool_call_id))
            else:
                next_steps.append((tool_step_type(record), record.tool_call_id))
        next_steps.append(("ResumeTurn", len(result.tool_calls)))
        session.set("state", session.active_state.model_copy(update={"status": "running_tools"}))
        return go(*next_steps)

    def _tool_calls_problem(
        self, ctx: StepContext, tx: StepTx, result: ToolCallsRequested
    ) -> str | None:
        if result.new_messages and not ctx.flow.builds_unfinished_turn_messages:
            return texts.UNFINISHED_MESSAGES_REQUIRED
        if not result.tool_calls:
            return "the runner returned ToolCallsRequested without any tool call"
        seen = {r.tool_call_id for r in store.load_tool_calls(tx.conn, ctx.session_id)}
        for call in result.tool_calls:
            if not isinstance(call, DeferredToolCall):
                kind = type(call).__name__
                return f"ToolCallsRequested.tool_calls holds {kind}, not DeferredToolCall"
            problem = tool_call_id_problem(call.tool_call_id, seen)
            if problem:
                return f"the model's tool calls cannot run: {problem}"
            seen.add(call.tool_call_id)
        return None

    def _record(
        self, ctx: StepContext, call: DeferredToolCall, turn_id: str, order: int
    ) -> AgentToolCall:
        options = ctx.flow.options
        given = call.policy
        policy = resolve_tool_policy(
            call.tool_name,
            options.tool_policies,
            options.default_tool_effect,
            framework_effect=given.effect if given else None,
            framework_requires_approval=given.requires_approval if given else None,
        )
        assert policy.effect is not None and policy.requires_approval is not None
        return AgentToolCall(
            tool_call_id=call.tool_call_id,
            turn_id=turn_id,
            tool_name=call.tool_name,
            arguments=call.arguments,
            effect=policy.effect,
            requires_approval=policy.requires_approval,
            status="awaiting_approval" if policy.requires_approval else "approved",
            deferral_order=order,
            tool_source_reference=call.tool_source_reference,
        )

    def _raise_approval(self, ctx: StepContext, tx: StepTx, record: AgentToolCall) -> None:
        deadline = ctx.flow.options.interrupt_deadline
        interrupt = AgentInterrupt(
            interrupt_id=record.tool_call_id,
            kind="tool_approval",
            tool_call_id=record.tool_call_id,
            tool_name=record.tool_name,
            arguments=record.arguments,
            created_at=now_text(),
            deadline=after(deadline) if deadline else None,
        )
        tx.session.set("pending_interrupts", [*tx.session.pending_interrupts, interrupt])
        tx.event("interrupt_raised", interrupt_raised_payload(interrupt))


def interrupt_raised_payload(interrupt: AgentInterrupt) -> dict[str, Any]:
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


def _checked_messages(
    ctx: StepContext, items: Sequence[FrameworkMessage]
) -> Sequence[FrameworkMessage]:
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
    return items


def _no_heartbeat() -> None:
    """Attempts are fenced by the Step-execution row, so a heartbeat has nothing to renew."""


# Tool Steps -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolFailed:
    error: str


class CallTool(StepHandler):
    """Runs one read or idempotent_write call; a crash runs it again with the same key."""

    step_type = "CallTool"
    options = StepOptions(max_attempts=3, failure_route="RecordToolFailure")
    has_execute = True
    timeout_option = "tool_call_timeout"

    def begin(self, ctx: StepContext, tx: StepTx) -> Transition | None:
        record = store.load_tool_call(tx.conn, ctx.session_id, ctx.step_input)
        if record is None or record.is_final or record.status != "approved":
            return END
        ctx.loaded = record
        tx.mark_started()
        tx.event(
            "tool_call_started",
            {"tool_call_id": record.tool_call_id, "tool_name": record.tool_name},
            turn_id=record.turn_id,
        )
        return None

    async def execute(self, ctx: StepContext) -> Any:
        record: AgentToolCall = ctx.loaded
        writer = ctx.runtime.event_writer(ctx, record.turn_id)
        execution = DeferredToolExecution(
            flow_id=ctx.session_id,
            turn_id=record.turn_id,
            step_execution_id=ctx.step_execution_id,
            tool_call=record,
            idempotency_key=idempotency_key(ctx.session_id, record.turn_id, record.tool_call_id),
            attempt=ctx.attempt,
            events=writer,
            heartbeat=_no_heartbeat,
            save_heartbeat_checkpoint=ctx.runtime.checkpoint_saver(ctx),
            heartbeat_checkpoint=ctx.checkpoint,
            input_answers=tuple(record.input_answers),
            supports_tool_tasks=False,
        )
        writer.start()
        try:
            outcome = await ctx.flow.runner.execute_deferred_tool_call(execution)
        except ToolExecutionError as error:
            return ToolFailed(str(error) or type(error).__name__)
        finally:
            await writer.close()
        if not isinstance(outcome, ToolExecutionResult) or not isinstance(outcome.output, str):
            raise NonRetryableError(
                f"{type(ctx.flow.runner).__name__}.execute_deferred_tool_call returned "
                f"{outcome!r}; it must return ToolExecutionResult(output: str)"
            )
        return outcome

    def commit(self, ctx: StepContext, tx: StepTx, result: Any) -> Transition:
        record = store.load_tool_call(tx.conn, ctx.session_id, ctx.step_input)
        if record is None or record.is_final:
            return END
        if isinstance(result, ToolFailed):
            record = record.model_copy(update={"status": "failed", "error": result.error})
        else:
            record = record.model_copy(update={"status": "succeeded", "output": result.output})
        finish_tool_call(tx, record)
        return END


class CallSingleAttemptTool(CallTool):
    """Runs one non_idempotent_write or unclassified call at most once."""

    step_type = "CallSingleAttemptTool"
    options = StepOptions(max_attempts=1, failure_route="RecordToolOutcomeUnknown")


class AwaitToolApproval(StepHandler):
    step_type = "AwaitToolApproval"
    options = StepOptions(waits=True)

    def check(self, ctx: StepContext, conn: Connection) -> Wait:
        call_id = ctx.step_input
        if store.count(conn, ctx.session_id, INTERRUPT_RESOLUTIONS, call_id):
            return READY
        if store.count(conn, ctx.session_id, TOOL_CALL_CANCELLATIONS, call_id):
            return READY
        session = store.read_session(conn, ctx.session_id)
        interrupt = _pending(session, call_id)
        if interrupt is None:
            record = store.load_tool_call(conn, ctx.session_id, call_id)
            return READY if record is None or record.status != "awaiting_approval" else NOT_READY
        if interrupt.deadline is None:
            return NOT_READY
        deadline = parse_time(interrupt.deadline).timestamp()
        return READY if deadline <= utc_now().timestamp() else Wait(False, deadline)

    def commit(self, ctx: StepContext, tx: StepTx, result: Any) -> Transition:
        call_id = ctx.step_input
        record = store.load_tool_call(tx.conn, ctx.session_id, call_id)
        if record is None or record.status != "awaiting_approval":
            return END
        taken = store.consume(tx.conn, ctx.session_id, INTERRUPT_RESOLUTIONS, call_id)
        if taken:
            resolution = AgentInterruptResolution.model_validate_json(taken[0].payload)
            if resolution.approved:
                store.save_tool_call(
                    tx.conn, ctx.session_id, record.model_copy(update={"status": "approved"})
                )
                return go((tool_step_type(record), call_id))
            rejected = record.model_copy(
                update={"status": "rejected", "rejection_message": resolution.rejection_message}
            )
            finish_tool_call(tx, rejected)
            return END
        # A cancellation wake only matters once the turn is steered or cancelled.
        store.consume(tx.conn, ctx.session_id, TOOL_CALL_CANCELLATIONS, call_id)
        interrupt = _pending(tx.session, call_id)
        if interrupt and interrupt.deadline and parse_time(interrupt.deadline) <= utc_now():
            remove_interrupt(tx, interrupt)
            tx.event(
                "interrupt_resolved",
                interrupt_resolved_payload(
                    interrupt, approved=False, rejection_message=texts.APPROVAL_DEADLINE_PASSED
                ),
            )
            rejected = record.model_copy(
                update={"status": "rejected", "rejection_message": texts.APPROVAL_DEADLINE_PASSED}
            )
            finish_tool_call(tx, rejected)
            return END
        return WAIT_AGAIN


def _pending(session: Session, interrupt_id: str) -> AgentInterrupt | None:
    return next((i for i in session.pending_interrupts if i.interrupt_id == interrupt_id), None)


def remove_interrupt(tx: StepTx, interrupt: AgentInterrupt) -> None:
    remaining = [
        i for i in tx.session.pending_interrupts if i.interrupt_id != interrupt.interrupt_id
    ]
    tx.session.set("pending_interrupts", remaining)


def interrupt_resolved_payload(
    interrupt: AgentInterrupt,
    *,
    approved: bool,
    rejection_message: str | None,
    answered: bool = False,
    cancellation_reason: str | None = None,
) -> dict[str, Any]:
    return {
        "interrupt_id": interrupt.interrupt_id,
        "approved": approved,
        "rejection_message": rejection_message,
        "kind": interrupt.kind,
        "answered": answered,
        "cancellation_reason": cancellation_reason,
    }


class ResumeTurn(StepHandler):
    step_type = "ResumeTurn"
    options = StepOptions(waits=True)

    def check(self, ctx: StepContext, conn: Connection) -> Wait:
        expected = int(ctx.step_input)
        if store.count(conn, ctx.session_id, TURN_CONTROL_REQUESTS):
            return READY
        return (
            READY if store.count(conn, ctx.session_id, TOOL_CALL_RESULTS) >= expected else NOT_READY
        )

    def commit(self, ctx: StepContext, tx: StepTx, result: Any) -> Transition:
        state = tx.session.active_state
        if state.active_turn_id is None:
            return END
        expected = int(ctx.step_input)
        if store.count(tx.conn, ctx.session_id, TOOL_CALL_RESULTS) < expected:
            return WAIT_AGAIN
        store.consume(tx.conn, ctx.session_id, TOOL_CALL_RESULTS, limit=expected)
        records = store.load_tool_calls(tx.conn, ctx.session_id)
        unfinished = sum(1 for r in records if not r.is_final)
        if unfinished:
            # A consumed result belonged to an earlier turn: wait for the rest.
            return go(("ResumeTurn", unfinished))
        tx.session.set("state", state.model_copy(update={"status": "running_model"}))
        return go(("RunModel", None))


# Failure routes -------------------------------------------------------------------------------


class RecordToolFailure(StepHandler):
    step_type = "RecordToolFailure"

    def commit(self, ctx: StepContext, tx: StepTx, result: Any) -> Transition:
        record = store.load_tool_call(tx.conn, ctx.session_id, ctx.step_input)
        recovery = ctx.recovery
        if record is None or record.is_final or recovery is None:
            return END
        if (
            recovery.attempt_progress == "NOT_STARTED"
            and record.status == "approved"
            and not record.input_answers
        ):
            error = f"{texts.TOOL_CALL_NOT_RUN_ERROR_PREFIX}: {recovery.detail}"
            final = record.model_copy(update={"status": "failed", "error": error})
        else:
            status = self.status_for(record)
            final = record.model_copy(update={"status": status, "error": recovery.detail})
        finish_tool_call(tx, final)
        return END

    def status_for(self, record: AgentToolCall) -> str:
        return "failed" if record.effect == "read" else "outcome_unknown"


class RecordToolOutcomeUnknown(RecordToolFailure):
    step_type = "RecordToolOutcomeUnknown"

    def status_for(self, record: AgentToolCall) -> str:
        return "outcome_unknown"


class RecordTurnFailure(StepHandler):
    """Ends a turn whose model Step ran out of attempts, keeping what it can of the turn."""

    step_type = "RecordTurnFailure"
    options = StepOptions(max_attempts=3)
    has_execute = True

    def begin(self, ctx: StepContext, tx: StepTx) -> Transition | None:
        state = tx.session.active_state
        if state.active_turn_id is None:
            return END
        ctx.loaded = {
            "turn_id": state.active_turn_id,
            "records": store.load_tool_calls(tx.conn, ctx.session_id),
            "messages": ctx.runtime.messages.load(
                tx.conn, ctx.session_id, state.next_message_sequence - 1
            ),
            "run_state": tx.session.framework_run_state,
            "settings": tx.session.turn_settings(),
        }
        return None

    async def execute(self, ctx: StepContext) -> Any:
        runner = ctx.flow.runner
        if not isinstance(runner, UnfinishedTurnMessageBuilder):
            return []
        loaded = ctx.loaded
        turn = AgentTurnContext(
            flow_id=ctx.session_id,
            turn_id=loaded["turn_id"],
            attempt=ctx.attempt,
            step_execution_id=ctx.step_execution_id,
            messages=loaded["messages"],
            framework_run_state=loaded["run_state"],
            tool_calls=loaded["records"],
            events=ctx.runtime.event_writer(ctx, loaded["turn_id"]),
            heartbeat=_no_heartbeat,
            tool_policies=ctx.flow.options.tool_policies,
            default_tool_effect=ctx.flow.options.default_tool_effect,
            session_settings=loaded["settings"],
        )
        try:
            items = list(await runner.build_unfinished_turn_messages(turn))
            return list(_checked_messages(ctx, items))
        except Exception as error:  # a runner defect must never block the failure route
            log.warning(
                "build_unfinished_turn_messages failed; storing no messages for it: %s", error
            )
            return []

    def commit(self, ctx: StepContext, tx: StepTx, result: Any) -> Transition:
        session = tx.session
        state = session.active_state
        turn_id: str = ctx.loaded["turn_id"]
        if state.active_turn_id != turn_id:
            return END
        recovery = ctx.recovery
        error = recovery.detail if recovery else "the turn failed"
        store.append_messages(tx.conn, session, turn_id, result)
        note = tool_calls_note(texts.TURN_FAILURE_NOTE_HEADER, ctx.loaded["records"])
        if note is not None:
            store.append_messages(tx.conn, session, turn_id, [build_user_item(ctx, note)])
        end_turn(tx, error=error)
        tx.event("turn_failed", {"error": error}, turn_id=turn_id)
        return go(("AwaitUserMessage", None))


STEP_HANDLERS: dict[str, StepHandler] = {
    handler.step_type: handler
    for handler in (
        StartAgentSession(),
        AwaitUserMessage(),
        RunModel(),
        CallTool(),
        CallSingleAttemptTool(),
        AwaitToolApproval(),
        ResumeTurn(),
        RecordToolFailure(),
        RecordToolOutcomeUnknown(),
        RecordTurnFailure(),
    )
}


def parse_user_message(payload: str) -> AgentUserMessage | None:
    try:
        return AgentUserMessage.model_validate_json(payload)
    except ValidationError:
        return None
