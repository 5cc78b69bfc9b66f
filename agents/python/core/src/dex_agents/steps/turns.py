"""Turn boundaries: starting a session, taking a user message, steering and cancelling."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.engine import Connection

from .. import store, texts
from ..clock import now_text
from ..results import sendable_record, tool_calls_note
from ..runner import (
    AgentTurnContext,
    EventWriter,
    FrameworkItemCache,
    FrameworkMessage,
    UnfinishedTurnMessageBuilder,
)
from ..stepkit import (
    END,
    NOT_READY,
    READY,
    WAIT_AGAIN,
    StepContext,
    StepHandler,
    StepOptions,
    StepScope,
    StepTx,
    Successor,
    Transition,
    Wait,
    go,
)
from ..store import (
    INTERRUPT_RESOLUTIONS,
    PLAN_EXECUTIONS,
    QUEUED_USER_MESSAGES,
    STEERED_USER_MESSAGES,
    TURN_CONTROL_REQUESTS,
    Session,
)
from ..types import (
    AgentMessage,
    AgentPlan,
    AgentState,
    AgentToolCall,
    AgentUsage,
    AgentUserMessage,
    ContextSummary,
    InteractionMode,
    TurnReplySequence,
    TurnSessionSettings,
)
from .common import (
    abandon_call,
    build_user_item,
    checked_messages,
    is_cancelled,
    no_heartbeat,
    pending_interrupt_of,
    question_interrupt_id,
    resolve_interrupt_for_cancellation,
    settings_problem,
)

log = logging.getLogger("dex_agents")

MAX_CHANNEL_MESSAGES = texts.MAX_INT32


def interaction_mode_for(
    ctx: StepScope, session: Session, messages: Sequence[AgentUserMessage]
) -> InteractionMode:
    """One decision for every turn start: planning when plan mode is enabled and a message
    asks for it or a draft plan exists, else chat."""
    if not ctx.flow.options.plan_mode_enabled:
        return "chat"
    draft = session.plan is not None and session.plan.status == "draft"
    return "planning" if draft or any(m.plan_mode for m in messages) else "chat"


def flow_features(ctx: StepScope) -> dict[str, object]:
    options = ctx.flow.options
    return {
        "plan_mode_enabled": options.plan_mode_enabled,
        "built_in_tools": list(options.built_in_tools),
    }


def begin_turn(
    ctx: StepScope,
    tx: StepTx,
    messages: Sequence[AgentUserMessage],
    mode: InteractionMode | None = None,
    texts_override: Sequence[str] | None = None,
    message_id: int | None = None,
) -> Transition:
    session = tx.session
    state = session.active_state
    turn_id = f"turn-{state.turn_count + 1}"
    user_texts = texts_override or [message.text for message in messages]
    items = [build_user_item(ctx, text) for text in user_texts]
    stored = store.append_messages(tx.conn, session, turn_id, items)
    state = session.active_state
    session.state = state.model_copy(
        update={
            "status": "running_model",
            "active_turn_id": turn_id,
            "interaction_mode": mode or interaction_mode_for(ctx, session, messages),
            "accepts_turn_control": True,
        }
    )
    session.turn_reply_sequence = TurnReplySequence(
        turn_id=turn_id, sequence=state.next_message_sequence
    )
    session.turn_session_settings = TurnSessionSettings(
        turn_id=turn_id, session_settings=session.session_settings or {}
    )
    session.features = flow_features(ctx)
    payload: dict[str, object] = {"sequence": stored[0].sequence}
    if message_id is not None:
        # The queued message that began the turn, so its sender can find the turn.
        payload["message_id"] = str(message_id)
    tx.event("turn_started", payload, turn_id=turn_id)
    tx.activate()
    return go(("RunModel", None))


def turn_message_count(session: Session) -> int:
    """Messages the active turn appended after its user messages."""
    state = session.active_state
    reply = session.turn_reply_sequence
    if reply is None or reply.turn_id != state.active_turn_id:
        return 0
    return state.next_message_sequence - reply.sequence


def end_turn(tx: StepTx, *, error: str | None = None) -> None:
    """Counts and clears the turn: its records, run state, interrupts and leftover results."""
    session = tx.session
    state = session.active_state
    session.state = state.model_copy(
        update={
            "status": "waiting_for_user_message",
            "active_turn_id": None,
            "turn_count": state.turn_count + 1,
            "accepts_turn_control": False,
            "last_turn_error": error,
        }
    )
    store.delete_tool_calls(tx.conn, session.session_id)
    store.clear_channel(tx.conn, session.session_id, store.TOOL_CALL_RESULTS)
    session.framework_run_state = None
    session.pending_interrupts = []


class StartAgentSession(StepHandler[None]):
    step_type = "StartAgentSession"

    def commit(self, ctx: StepContext[None], tx: StepTx, result: None) -> Transition:
        session = tx.session
        if session.state is not None:
            return END
        start = session.start_input
        settings = start.session_settings
        problem = settings_problem(settings) if settings is not None else None
        if problem:
            reason = f"{texts.SESSION_SETTINGS_INVALID}: {problem}"
            session.state = AgentState(status="failed", last_turn_error=reason)
            return END
        session.state = AgentState()
        session.features = flow_features(ctx)
        session.pending_interrupts = []
        session.usage = AgentUsage()
        if settings:
            session.session_settings = settings
        if start.initial_message and start.initial_message.strip():
            return begin_turn(ctx, tx, [AgentUserMessage(text=start.initial_message)])
        tx.activate()  # the start input, without a turn
        return go(("AwaitUserMessage", None))


class AwaitUserMessage(StepHandler[None]):
    """Waits for a control wake, a queued message, or a plan execution, in that order: a
    steer beats a queued message, which beats a plan execution."""

    step_type = "AwaitUserMessage"
    options = StepOptions(waits=True, moves_session_after=True)

    def check(self, ctx: StepContext[None], conn: Connection) -> Wait:
        for channel in (TURN_CONTROL_REQUESTS, QUEUED_USER_MESSAGES):
            if store.count(conn, ctx.session_id, channel):
                return READY
        plan = store.read_session(conn, ctx.session_id).plan
        if plan is None or plan.status not in ("draft", "active"):
            return NOT_READY
        requested = store.count(conn, ctx.session_id, PLAN_EXECUTIONS, str(plan.revision))
        return READY if requested else NOT_READY

    def commit(self, ctx: StepContext[None], tx: StepTx, result: None) -> Transition:
        state = tx.session.active_state
        if state.status == "failed" or state.active_turn_id is not None:
            return END
        if store.count(tx.conn, ctx.session_id, TURN_CONTROL_REQUESTS):
            return go(("ApplyTurnControl", None))
        taken = store.consume(tx.conn, ctx.session_id, QUEUED_USER_MESSAGES)
        if taken:
            message = AgentUserMessage.model_validate_json(taken[0].payload)
            return begin_turn(ctx, tx, [message], message_id=taken[0].message_id)
        return self._execute_plan(ctx, tx)

    def _execute_plan(self, ctx: StepContext[None], tx: StepTx) -> Transition:
        session = tx.session
        plan = session.plan
        if plan is None or plan.status not in ("draft", "active"):
            return WAIT_AGAIN
        taken = store.consume(tx.conn, ctx.session_id, PLAN_EXECUTIONS, str(plan.revision))
        if not taken:
            return WAIT_AGAIN
        session.pending_plan_execution = None
        if plan.status == "draft":
            plan = plan.model_copy(update={"status": "active", "updated_at": now_text()})
            session.plan = plan
            tx.event(
                "plan_updated",
                {"revision": plan.revision, "status": plan.status, "task_count": len(plan.tasks)},
            )
        approval = texts.PLAN_APPROVED.format(revision=plan.revision)
        transition = begin_turn(ctx, tx, [], "executing", texts_override=[approval])
        tx.event("plan_execution_started", {"revision": plan.revision})
        return transition


@dataclass(frozen=True)
class LoadedTurn:
    """What a runner call of the active turn needs, loaded in the attempt's first commit."""

    turn_id: str
    messages: list[AgentMessage]
    run_state: str | None
    tool_calls: list[AgentToolCall]
    settings: dict[str, object]
    mode: InteractionMode
    plan: AgentPlan | None
    summary: ContextSummary | None
    # The session's memo of parsed framework items, loaded after the messages so it is the
    # memo of the session the message cache now holds.
    framework_items: FrameworkItemCache


def load_turn(ctx: StepScope, tx: StepTx) -> LoadedTurn | None:
    """What a runner call of the active turn needs; with a context summary, only the
    messages after it."""
    session = tx.session
    state = session.active_state
    if state.active_turn_id is None:
        return None
    summary = session.context_summary
    messages = ctx.services.messages.load(
        tx.conn,
        ctx.session_id,
        state.next_message_sequence - 1,
        after=summary.last_sequence if summary else 0,
    )
    return LoadedTurn(
        turn_id=state.active_turn_id,
        messages=messages,
        run_state=session.framework_run_state,
        tool_calls=store.load_tool_calls(tx.conn, ctx.session_id),
        settings=session.turn_settings(),
        mode=state.interaction_mode,
        plan=session.plan,
        summary=summary,
        framework_items=ctx.services.messages.framework_items(ctx.session_id),
    )


def turn_context(ctx: StepScope, loaded: LoadedTurn, events: EventWriter) -> AgentTurnContext:
    options = ctx.flow.options
    return AgentTurnContext(
        flow_id=ctx.session_id,
        turn_id=loaded.turn_id,
        attempt=ctx.attempt,
        step_execution_id=ctx.step_execution_id,
        messages=loaded.messages,
        framework_run_state=loaded.run_state,
        # Each result as the model can be sent it; the records keep what the calls returned.
        tool_calls=[sendable_record(record) for record in loaded.tool_calls],
        events=events,
        heartbeat=no_heartbeat,
        tool_policies=options.tool_policies,
        default_tool_effect=options.default_tool_effect,
        enabled_built_in_tools=tuple(options.built_in_tools),
        session_settings=loaded.settings,
        interaction_mode=loaded.mode,
        plan=loaded.plan,
        context_summary=loaded.summary,
        framework_items=loaded.framework_items,
    )


async def build_unfinished_messages(ctx: StepContext[LoadedTurn]) -> list[FrameworkMessage] | None:
    """The runner's unfinished-turn messages; None when it has none or they failed, so a
    runner defect never blocks the Step that ends the turn."""
    runner = ctx.flow.runner
    loaded = ctx.loaded
    if loaded is None or not isinstance(runner, UnfinishedTurnMessageBuilder):
        return None
    turn = turn_context(ctx, loaded, ctx.services.event_writer(ctx, loaded.turn_id))
    try:
        messages = list(await runner.build_unfinished_turn_messages(turn))
        return checked_messages(ctx, messages, loaded.tool_calls)
    except Exception as error:
        log.warning("build_unfinished_turn_messages failed; storing no messages for it: %s", error)
        return None


class ApplyTurnControl(StepHandler[LoadedTurn, "list[FrameworkMessage] | None"]):
    """Ends a steered or cancelled turn and starts the steered one. The only consumer of
    SteeredUserMessages."""

    step_type = "ApplyTurnControl"
    options = StepOptions(max_attempts=3)
    has_execute = True

    def begin(self, ctx: StepContext[LoadedTurn], tx: StepTx) -> Transition | None:
        ctx.loaded = load_turn(ctx, tx)
        return None

    async def execute(self, ctx: StepContext[LoadedTurn]) -> list[FrameworkMessage] | None:
        return await build_unfinished_messages(ctx)

    def commit(
        self, ctx: StepContext[LoadedTurn], tx: StepTx, result: list[FrameworkMessage] | None
    ) -> Transition:
        session = tx.session
        steered = store.consume(
            tx.conn, ctx.session_id, STEERED_USER_MESSAGES, limit=MAX_CHANNEL_MESSAGES
        )
        store.consume(tx.conn, ctx.session_id, TURN_CONTROL_REQUESTS, limit=MAX_CHANNEL_MESSAGES)
        state = session.active_state
        loaded_turn = ctx.loaded.turn_id if ctx.loaded else None
        if state.active_turn_id is not None and state.active_turn_id == loaded_turn:
            self._end_turn(tx, result, steered_count=len(steered))
        messages = [AgentUserMessage.model_validate_json(m.payload) for m in steered]
        if messages and session.active_state.active_turn_id is None:
            return begin_turn(ctx, tx, messages)
        return go(("AwaitUserMessage", None))

    def _end_turn(
        self, tx: StepTx, unfinished: list[FrameworkMessage] | None, *, steered_count: int
    ) -> None:
        session = tx.session
        turn_id = session.active_state.active_turn_id
        assert turn_id is not None
        cancelled = is_cancelled(session)
        if unfinished is not None:
            store.append_messages(tx.conn, session, turn_id, unfinished)
        else:
            header = texts.CANCELLED_NOTE_HEADER if cancelled else texts.STEERED_NOTE_HEADER
            note = tool_calls_note(header, store.load_tool_calls(tx.conn, session.session_id))
            if note is not None:
                store.append_messages(tx.conn, session, turn_id, [build_user_item(tx.ctx, note)])
        message_count = turn_message_count(session)
        end_turn(tx, error=None)
        if cancelled:
            tx.event("turn_cancelled", {"message_count": message_count}, turn_id=turn_id)
        else:
            payload = {"steered_message_count": steered_count, "message_count": message_count}
            tx.event("turn_steered", payload, turn_id=turn_id)


class FinishTurnCancellation(StepHandler[None]):
    """Records every waiting call that cancel_turn abandoned; never ends the turn while
    ResumeTurn still waits."""

    step_type = "FinishTurnCancellation"

    def commit(self, ctx: StepContext[None], tx: StepTx, result: None) -> Transition:
        session = tx.session
        state = session.active_state
        turn_id = ctx.id_input()
        if state.active_turn_id != turn_id or not is_cancelled(session):
            return END
        if state.status != "running_tools":
            return go(("ApplyTurnControl", None))
        next_steps: list[Successor] = []
        for record in store.load_tool_calls(tx.conn, ctx.session_id):
            step = self._settle(tx, record)
            if step is not None:
                next_steps.append(step)
        return go(*next_steps)

    def _settle(self, tx: StepTx, record: AgentToolCall) -> Successor | None:
        waiting = record.status in ("awaiting_approval", "awaiting_answer", "waiting_for_timer")
        if waiting and record.task_id is None:
            if record.status != "waiting_for_timer" and self._answer_committed(tx, record):
                step = (
                    "AwaitToolApproval"
                    if record.status == "awaiting_approval"
                    else "AwaitQuestionAnswer"
                )
                return (step, record.tool_call_id)
            abandon_call(tx, record, "turn_cancelled")
            return None
        if record.status == "waiting_for_task" or (
            record.status == "awaiting_answer" and record.task_id is not None
        ):
            interrupt = pending_interrupt_of(tx.session, record)
            if interrupt is not None:
                resolve_interrupt_for_cancellation(tx, interrupt, "turn_cancelled")
            kept = record.model_copy(
                update={"status": "waiting_for_task", "cancellation_reason": "turn_cancelled"}
            )
            store.save_tool_call(tx.conn, tx.session.session_id, kept)
            return ("CancelToolTask", record.tool_call_id)
        return None

    @staticmethod
    def _answer_committed(tx: StepTx, record: AgentToolCall) -> bool:
        key = (
            record.tool_call_id
            if record.status == "awaiting_approval"
            else question_interrupt_id(record)
        )
        return store.count(tx.conn, tx.session.session_id, INTERRUPT_RESOLUTIONS, key) > 0
