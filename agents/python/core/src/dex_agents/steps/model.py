"""RunModel, one model call per Step, and RecordTurnFailure, its failure route."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import store, texts
from ..model_errors import model_call_retry_advice
from ..policy import resolve_tool_policy, stored_name_problem, tool_call_id_problem
from ..results import tool_calls_note
from ..runner import (
    DeferredToolCall,
    FrameworkMessage,
    ToolCallsRequested,
    TurnCompleted,
    TurnContinued,
)
from ..stepkit import (
    END,
    NonRetryableError,
    RetryAdvice,
    StepContext,
    StepHandler,
    StepOptions,
    StepTx,
    Successor,
    Transition,
    go,
)
from ..types import AgentToolCall
from .builtin_calls import (
    built_in_record,
    is_built_in,
    route_built_in,
    settle_planning_rejection,
    write_todos_count,
)
from .common import (
    build_user_item,
    checked_messages,
    control_reason,
    raise_interrupt,
    record_usage,
    tool_step_type,
)
from .compaction import CompactionNeeded, apply_retention, compaction_decision
from .turns import (
    LoadedTurn,
    build_unfinished_messages,
    end_turn,
    load_turn,
    turn_context,
    turn_message_count,
)

if TYPE_CHECKING:
    from datetime import timedelta

    from ..flow import AgentSessionOptions

# What RunModel's Execute hands its commit: the runner's outcome, or the need to compact first.
ModelOutcome = TurnCompleted | ToolCallsRequested | TurnContinued | CompactionNeeded


class RunModel(StepHandler[LoadedTurn, ModelOutcome]):
    step_type = "RunModel"
    cancelled_by_cancel_turn = True
    options = StepOptions(max_attempts=3, failure_route="RecordTurnFailure")
    has_execute = True

    def timeout(self, options: AgentSessionOptions) -> timedelta | None:
        return options.model_call_timeout

    def retry_advice(self, error: BaseException) -> RetryAdvice:
        return model_call_retry_advice(error)

    def begin(self, ctx: StepContext[LoadedTurn], tx: StepTx) -> Transition | None:
        session = tx.session
        state = session.active_state
        if state.active_turn_id is None:
            return END
        # Steering and cancellation are decided before the model call only: a retry reuses
        # what the first attempt saw.
        if ctx.attempt == 1 and control_reason(tx) is not None:
            return go(("ApplyTurnControl", None))
        if ctx.loaded is None or ctx.loaded.turn_id != state.active_turn_id:
            ctx.loaded = load_turn(ctx, tx)
        return None

    async def execute(self, ctx: StepContext[LoadedTurn]) -> ModelOutcome:
        loaded = ctx.need_loaded()
        writer = ctx.services.event_writer(ctx, loaded.turn_id)
        turn = turn_context(ctx, loaded, writer)
        decision = compaction_decision(ctx, turn)
        if decision is not None:
            return decision
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

    def commit(self, ctx: StepContext[LoadedTurn], tx: StepTx, result: ModelOutcome) -> Transition:
        turn_id = ctx.need_loaded().turn_id
        if tx.session.active_state.active_turn_id != turn_id:
            return END
        if isinstance(result, CompactionNeeded):
            state = tx.session.active_state.model_copy(update={"status": "compacting_context"})
            tx.session.state = state
            return go(("CompactContext", {"through_sequence": result.through_sequence}))
        record_usage(tx, result.usage)
        if isinstance(result, TurnCompleted):
            return self._complete(ctx, tx, result, turn_id)
        if isinstance(result, TurnContinued):
            if result.new_messages and not ctx.flow.builds_unfinished_turn_messages:
                return self._fail(tx, texts.UNFINISHED_MESSAGES_REQUIRED, turn_id)
            messages = checked_messages(ctx, result.new_messages, ctx.need_loaded().tool_calls)
            store.append_messages(tx.conn, tx.session, turn_id, messages)
            tx.session.framework_run_state = result.framework_run_state
            return go(("RunModel", None))
        return self._request_tools(ctx, tx, result, turn_id)

    def _complete(
        self, ctx: StepContext[LoadedTurn], tx: StepTx, result: TurnCompleted, turn_id: str
    ) -> Transition:
        session = tx.session
        messages = checked_messages(ctx, result.new_messages, ctx.need_loaded().tool_calls)
        store.append_messages(tx.conn, session, turn_id, messages)
        message_count = turn_message_count(session)
        end_turn(tx, error=result.turn_error)
        apply_retention(ctx, tx)
        if result.turn_error:
            tx.event("turn_failed", {"error": result.turn_error}, turn_id=turn_id)
        else:
            tx.event("turn_completed", {"message_count": message_count}, turn_id=turn_id)
        return go(("AwaitUserMessage", None))

    def _fail(self, tx: StepTx, error: str, turn_id: str) -> Transition:
        """Fails the turn in this commit, without a retry (a runner or model defect)."""
        end_turn(tx, error=error)
        tx.event("turn_failed", {"error": error}, turn_id=turn_id)
        return go(("AwaitUserMessage", None))

    def _request_tools(
        self, ctx: StepContext[LoadedTurn], tx: StepTx, result: ToolCallsRequested, turn_id: str
    ) -> Transition:
        session = tx.session
        known = store.load_tool_calls(tx.conn, ctx.session_id)
        problem = self._tool_calls_problem(ctx, result, {r.tool_call_id for r in known})
        if problem is not None:
            return self._fail(tx, problem, turn_id)
        messages = checked_messages(ctx, result.new_messages, ctx.need_loaded().tool_calls)
        store.append_messages(tx.conn, session, turn_id, messages)
        session.framework_run_state = result.framework_run_state
        first_order = len(known)
        planning = session.active_state.interaction_mode == "planning"
        write_todos = write_todos_count(ctx, result.tool_calls)
        next_steps: list[Successor] = []
        for order, call in enumerate(result.tool_calls, start=first_order):
            built_in = is_built_in(ctx, call.tool_name)
            if built_in:
                record = built_in_record(call, turn_id, order)
            else:
                record = self._record(ctx, call, turn_id, order, session.trace_context)
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
            if planning and not (built_in and call.tool_name == "write_todos"):
                settle_planning_rejection(tx, record)
            elif built_in:
                step = route_built_in(ctx, tx, record, write_todos)
                if step is not None:
                    next_steps.append(step)
            elif record.requires_approval:
                raise_interrupt(ctx, tx, record)
                next_steps.append(("AwaitToolApproval", record.tool_call_id))
            else:
                next_steps.append((tool_step_type(record), record.tool_call_id))
        next_steps.append(("ResumeTurn", len(result.tool_calls)))
        session.state = session.active_state.model_copy(update={"status": "running_tools"})
        return go(*next_steps)

    def _tool_calls_problem(
        self, ctx: StepContext[LoadedTurn], result: ToolCallsRequested, seen: set[str]
    ) -> str | None:
        """What makes the requested calls impossible to run; `seen`: the turn's call IDs so
        far (extended with the new ones)."""
        if result.new_messages and not ctx.flow.builds_unfinished_turn_messages:
            return texts.UNFINISHED_MESSAGES_REQUIRED
        if not result.tool_calls:
            return "the runner returned ToolCallsRequested without any tool call"
        for call in result.tool_calls:
            if not isinstance(call, DeferredToolCall):
                kind = type(call).__name__
                return f"ToolCallsRequested.tool_calls holds {kind}, not DeferredToolCall"
            problem = tool_call_id_problem(call.tool_call_id, seen) or stored_name_problem(
                call.tool_name, "tool name"
            )
            if problem:
                return f"the model's tool calls cannot run: {problem}"
            seen.add(call.tool_call_id)
        return None

    def _record(
        self,
        ctx: StepContext[LoadedTurn],
        call: DeferredToolCall,
        turn_id: str,
        order: int,
        trace_context: str | None,
    ) -> AgentToolCall:
        """The call's record; its tool Step's span joins `trace_context`, the activation's."""
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
            trace_context=trace_context,
        )


class RecordTurnFailure(StepHandler[LoadedTurn, "list[FrameworkMessage] | None"]):
    """Ends a turn whose model Step ran out of attempts, keeping what it can of the turn."""

    step_type = "RecordTurnFailure"
    cancelled_by_cancel_turn = True
    options = StepOptions(max_attempts=3)
    has_execute = True

    def begin(self, ctx: StepContext[LoadedTurn], tx: StepTx) -> Transition | None:
        ctx.loaded = load_turn(ctx, tx)
        return END if ctx.loaded is None else None

    async def execute(self, ctx: StepContext[LoadedTurn]) -> list[FrameworkMessage] | None:
        return await build_unfinished_messages(ctx)

    def commit(
        self, ctx: StepContext[LoadedTurn], tx: StepTx, result: list[FrameworkMessage] | None
    ) -> Transition:
        session = tx.session
        turn_id = ctx.need_loaded().turn_id
        if session.active_state.active_turn_id != turn_id:
            return END
        recovery = ctx.recovery
        error = recovery.detail if recovery else "the turn failed"
        if result:
            store.append_messages(tx.conn, session, turn_id, result)
        note = tool_calls_note(texts.TURN_FAILURE_NOTE_HEADER, ctx.need_loaded().tool_calls)
        if note is not None:
            store.append_messages(tx.conn, session, turn_id, [build_user_item(ctx, note)])
        end_turn(tx, error=error)
        tx.event("turn_failed", {"error": error}, turn_id=turn_id)
        return go(("AwaitUserMessage", None))
