"""CompactContext: one summary call that folds the earlier conversation into ContextSummary,
and the retention that later deletes what a summary covers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import store
from ..clock import now_text
from ..model_errors import model_call_retry_advice
from ..runner import (
    AgentTurnContext,
    ContextCompactionRunner,
    ContextSummaryRequest,
    ContextSummaryResult,
)
from ..stepkit import (
    END,
    RetryAdvice,
    StepContext,
    StepHandler,
    StepOptions,
    StepScope,
    StepTx,
    Transition,
    go,
)
from ..types import AgentMessage, ContextSummary
from .common import record_usage

if TYPE_CHECKING:
    from datetime import timedelta

    from ..flow import AgentSessionOptions


@dataclass(frozen=True)
class CompactionNeeded:
    """RunModel's decision to summarize through `through_sequence` instead of calling the model."""

    through_sequence: int


def compaction_decision(ctx: StepScope, turn: AgentTurnContext) -> CompactionNeeded | None:
    """At trigger_ratio of the window, a cutoff after the current summary compacts."""
    policy = ctx.flow.options.compaction
    runner = ctx.flow.runner
    if policy is None or not isinstance(runner, ContextCompactionRunner):
        return None
    if runner.estimate_input_tokens(turn) < policy.trigger_ratio * policy.context_window_tokens:
        return None
    budget = int(policy.retained_ratio * policy.context_window_tokens)
    cutoff = runner.select_compaction_cutoff(turn, budget)
    summarized = turn.context_summary.last_sequence if turn.context_summary else 0
    if cutoff is None or cutoff <= summarized:
        return None
    return CompactionNeeded(cutoff)


def apply_retention(ctx: StepScope, tx: StepTx) -> None:
    """Deletes messages a summary covers, keeping the newest retained_message_limit."""
    limit = ctx.flow.options.retained_message_limit
    summary = tx.session.context_summary
    if ctx.flow.options.compaction is None or limit is None or summary is None:
        return
    newest = tx.session.active_state.next_message_sequence - 1
    through = min(summary.last_sequence, newest - limit)
    if through > 0:
        store.delete_messages_through(tx.conn, tx.session.session_id, through)


@dataclass(frozen=True)
class LoadedCompaction:
    """What a CompactContext attempt summarizes, loaded in its first commit."""

    turn_id: str
    through: int
    previous: ContextSummary | None
    messages: list[AgentMessage]
    settings: dict[str, object]


class CompactContext(StepHandler[LoadedCompaction, ContextSummaryResult]):
    step_type = "CompactContext"
    cancelled_by_cancel_turn = True
    options = StepOptions(max_attempts=3, failure_route="RecordTurnFailure")
    has_execute = True

    def timeout(self, options: AgentSessionOptions) -> timedelta | None:
        return options.model_call_timeout

    def retry_advice(self, error: BaseException) -> RetryAdvice:
        return model_call_retry_advice(error)

    def begin(self, ctx: StepContext[LoadedCompaction], tx: StepTx) -> Transition | None:
        session = tx.session
        state = session.active_state
        if state.active_turn_id is None:
            return END
        through = int(ctx.compaction_input()["through_sequence"])
        tx.event("compaction_started", {"through_sequence": through})
        previous = session.context_summary
        ctx.loaded = LoadedCompaction(
            turn_id=state.active_turn_id,
            through=through,
            previous=previous,
            messages=[
                m
                for m in store.load_messages(
                    tx.conn,
                    ctx.session_id,
                    after_sequence=previous.last_sequence if previous else 0,
                )
                if m.sequence <= through
            ],
            settings=session.turn_settings(),
        )
        return None

    async def execute(self, ctx: StepContext[LoadedCompaction]) -> ContextSummaryResult:
        runner = ctx.flow.runner
        policy = ctx.flow.options.compaction
        assert isinstance(runner, ContextCompactionRunner) and policy is not None
        loaded = ctx.need_loaded()
        writer = ctx.services.event_writer(ctx, loaded.turn_id)
        request = ContextSummaryRequest(
            flow_id=ctx.session_id,
            turn_id=loaded.turn_id,
            attempt=ctx.attempt,
            previous_summary=loaded.previous,
            messages=loaded.messages,
            through_sequence=loaded.through,
            events=writer,
            heartbeat=lambda: None,
            input_token_budget=policy.context_window_tokens,
            session_settings=loaded.settings,
        )
        writer.start()
        try:
            result = await runner.summarize_context(request)
        finally:
            await writer.close()
        if not result.text.strip():
            raise ValueError("summarize_context returned a blank summary")
        return result

    def commit(
        self, ctx: StepContext[LoadedCompaction], tx: StepTx, result: ContextSummaryResult
    ) -> Transition:
        session = tx.session
        loaded = ctx.need_loaded()
        if session.active_state.active_turn_id != loaded.turn_id:
            return END
        previous = loaded.previous
        through = loaded.through
        summary = ContextSummary(
            generation=(previous.generation if previous else 0) + 1,
            first_sequence=1,
            last_sequence=through,
            text=result.text,
            created_at=now_text(),
        )
        session.context_summary = summary
        record_usage(tx, result.usage)
        session.state = session.active_state.model_copy(update={"status": "running_model"})
        tx.event(
            "compaction_finished", {"generation": summary.generation, "through_sequence": through}
        )
        apply_retention(ctx, tx)
        return go(("RunModel", None))
