"""Drives a runner through turns in memory, calling its methods the way the session Flow does.

`RunnerDriver` builds real `AgentTurnContext` and `DeferredToolExecution` values, keeps the
stored messages and tool call records of the session, and lets a test decide each deferred
call's outcome. Runner tests use it to check a runner alone, with no engine and no database;
the matrix (`dex_agents.testing.matrix`) checks the same behaviour through real Workers.

    driver = RunnerDriver(runner, tool_policies={"send_email": ToolPolicy(effect="read")})
    result = await driver.turn("Weather in Paris?")
    assert result.final.new_messages[-1].text == "Sunny."
    await driver.turn("Email Ana.", decide=lambda record: Reject("Not today."))

What it does not do: approvals wait for nobody (`decide` answers at once), nothing is
retried, and a tool that asks for input or starts a task is refused with an AssertionError.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..policy import idempotency_key, resolve_tool_policy
from ..results import sendable_record, user_message_as_sent
from ..runner import (
    AgentFrameworkRunner,
    AgentTurnContext,
    AgentTurnOutcome,
    DeferredToolCall,
    DeferredToolExecution,
    FrameworkItemCache,
    FrameworkMessage,
    ToolCallsRequested,
    ToolExecutionError,
    ToolExecutionResult,
    ToolPolicy,
    ToolStepsReadTurn,
    TurnCompleted,
)
from ..types import AgentMessage, AgentToolCall, AgentUsage, ToolEffect


@dataclass(frozen=True)
class Reject:
    """Reject the call, with this message for the model (None: the default rejection text)."""

    message: str | None = None


Decision = Literal["run", "reject", "outcome_unknown"] | Reject
"""What happens to one deferred call: it runs, is rejected (as `Reject()`), or its Worker
died inside it (`outcome_unknown`, as after a SIGKILL in CallSingleAttemptTool)."""

Decide = Callable[[AgentToolCall], Decision]


def run_every_call(record: AgentToolCall) -> Decision:
    return "run"


@dataclass
class RecordingEvents:
    """The events a runner wrote, in order."""

    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def write(self, type: str, payload: Mapping[str, Any]) -> None:
        self.events.append((type, dict(payload)))

    def of_type(self, type: str) -> list[dict[str, Any]]:
        return [payload for kind, payload in self.events if kind == type]

    def texts(self, type: str = "text_delta") -> str:
        """The `text` of every event of `type`, joined: the streamed answer by default."""
        return "".join(payload["text"] for payload in self.of_type(type))


@dataclass
class TurnResult:
    outcomes: list[AgentTurnOutcome]
    """Every model step's outcome, in order; the last one completed the turn."""
    records: list[AgentToolCall]
    """The turn's tool call records as they were settled."""
    new_messages: list[AgentMessage]
    """The messages the turn stored, its user message left out."""

    @property
    def final(self) -> TurnCompleted:
        last = self.outcomes[-1]
        assert isinstance(last, TurnCompleted), f"the turn ended with {type(last).__name__}"
        return last


async def _no_checkpoint(checkpoint: str) -> None:
    return None


def stored_message(message: FrameworkMessage, sequence: int, turn_id: str) -> AgentMessage:
    """A runner's message as the session stores it, at `sequence` of `turn_id`."""
    return AgentMessage(
        sequence=sequence,
        turn_id=turn_id,
        role=message.role,
        text=message.text,
        tool_call_id=message.tool_call_id,
        tool_name=message.tool_name,
        tool_arguments=message.tool_arguments,
        tool_output=message.tool_output,
        framework_item=message.framework_item,
        created_at="2026-01-01T00:00:00.000Z",
    )


@dataclass
class RunnerDriver:
    """A session in memory around `runner`: its stored messages, tool call records, events."""

    runner: AgentFrameworkRunner[Any]
    tool_policies: dict[str, ToolPolicy] = field(default_factory=dict)
    default_tool_effect: ToolEffect = "unclassified"
    flow_id: str = "session-1"
    session_settings: dict[str, Any] = field(default_factory=dict)
    """The settings every Step's turn runs with (`AgentTurnContext.session_settings`)."""
    messages: list[AgentMessage] = field(default_factory=list)
    events: RecordingEvents = field(default_factory=RecordingEvents)
    usage: AgentUsage = field(default_factory=AgentUsage)
    outcomes: list[AgentTurnOutcome] = field(default_factory=list)
    """Every model step's outcome in the session, in order."""
    turn_count: int = 0
    framework_items: FrameworkItemCache = field(default_factory=FrameworkItemCache)
    """The session's parsed-item memo, kept across turns as a Worker keeps it."""
    records: list[AgentToolCall] = field(default_factory=list)
    """The active turn's tool call records, settled ones with their outcome."""
    run_state: str | None = None
    """The run state of the last model step that requested tool calls."""

    def append(self, turn_id: str, message: FrameworkMessage) -> AgentMessage:
        """Stores one message, as the session stores a runner's new messages."""
        stored = stored_message(message, len(self.messages) + 1, turn_id)
        self.messages.append(stored)
        return stored

    def context(
        self, turn_id: str, run_state: str | None, records: Sequence[AgentToolCall] | None = None
    ) -> AgentTurnContext:
        """The context of the next model step; `records` default to the turn's records."""
        return AgentTurnContext(
            flow_id=self.flow_id,
            turn_id=turn_id,
            attempt=1,
            step_execution_id=f"RunModel-{len(self.outcomes) + 1}",
            messages=list(self.messages),
            framework_run_state=run_state,
            # As the session hands them over: each result as the model can be sent it.
            tool_calls=[sendable_record(r) for r in (self.records if records is None else records)],
            events=self.events,
            heartbeat=lambda: None,
            tool_policies=self.tool_policies,
            default_tool_effect=self.default_tool_effect,
            framework_items=self.framework_items,
            session_settings=self.session_settings,
        )

    def start_turn(self, text: str) -> str:
        """Stores the user message of a new turn and returns the turn's ID."""
        self.turn_count += 1
        self.records = []
        turn_id = f"turn-{self.turn_count}"
        item = user_message_as_sent(self.runner.build_user_message, text)
        assert isinstance(item, FrameworkMessage), item
        self.append(turn_id, item)
        return turn_id

    async def model_step(
        self, turn_id: str, run_state: str | None, records: Sequence[AgentToolCall] | None = None
    ) -> AgentTurnOutcome:
        """One RunModel: calls the runner, stores its new messages, adds its usage."""
        outcome = await self.runner.run_model_step(self.context(turn_id, run_state, records))
        self.outcomes.append(outcome)
        if isinstance(outcome, ToolCallsRequested):
            self.run_state = outcome.framework_run_state
        if outcome.usage:
            self.usage = self.usage.plus(outcome.usage)
        for message in outcome.new_messages:
            self.append(turn_id, message)
        return outcome

    def approved_record(self, turn_id: str, call: DeferredToolCall) -> AgentToolCall:
        """The record the session keeps for a deferred call once it may run, its policy
        resolved as the session resolves it: explicit policy, the call's, the default."""
        given = call.policy or ToolPolicy()
        policy = resolve_tool_policy(
            call.tool_name,
            self.tool_policies,
            self.default_tool_effect,
            framework_effect=given.effect,
            framework_requires_approval=given.requires_approval,
        )
        assert policy.effect is not None
        return AgentToolCall(
            tool_call_id=call.tool_call_id,
            turn_id=turn_id,
            tool_name=call.tool_name,
            arguments=call.arguments,
            effect=policy.effect,
            requires_approval=bool(policy.requires_approval),
            status="approved",
            deferral_order=len(self.records),
            tool_source_reference=call.tool_source_reference,
        )

    def execution(self, record: AgentToolCall, attempt: int = 1) -> DeferredToolExecution:
        return DeferredToolExecution(
            flow_id=self.flow_id,
            turn_id=record.turn_id,
            step_execution_id=f"CallTool-{record.tool_call_id}",
            tool_call=record,
            idempotency_key=idempotency_key(self.flow_id, record.turn_id, record.tool_call_id),
            attempt=attempt,
            events=self.events,
            heartbeat=lambda: None,
            save_heartbeat_checkpoint=_no_checkpoint,
            turn=self._tool_step_turn(record),
        )

    def _tool_step_turn(self, record: AgentToolCall) -> AgentTurnContext | None:
        """The turn a `ToolStepsReadTurn` runner's tool Step reads, as CallTool loads it."""
        runner = self.runner
        if not (isinstance(runner, ToolStepsReadTurn) and runner.tool_steps_read_turn):
            return None
        return self.context(record.turn_id, self.run_state)

    async def execute(self, record: AgentToolCall, attempt: int = 1) -> AgentToolCall:
        """Runs one call as CallTool does: the settled record, `failed` on ToolExecutionError."""
        try:
            result = await self.runner.execute_deferred_tool_call(self.execution(record, attempt))
        except ToolExecutionError as error:
            return record.model_copy(update={"status": "failed", "error": str(error)})
        assert isinstance(result, ToolExecutionResult), f"unsupported outcome {result!r}"
        return record.model_copy(
            update={
                "status": "succeeded",
                "output": result.output,
                "framework_data": result.framework_data,
            }
        )

    async def run_tools(
        self, turn_id: str, requested: ToolCallsRequested, decide: Decide = run_every_call
    ) -> list[AgentToolCall]:
        """Records and settles each requested call; returns the settled records."""
        settled: list[AgentToolCall] = []
        for call in requested.tool_calls:
            record = self.approved_record(turn_id, call)
            self.records.append(record)
            settled.append(await self._settle(record, decide(record)))
            self.records[-1] = settled[-1]
        return settled

    async def turn(
        self, text: str, decide: Decide = run_every_call, max_model_calls: int = 8
    ) -> TurnResult:
        """One whole turn: model steps, each requested call settled by `decide`, until the
        runner completes the turn (at most `max_model_calls` model steps)."""
        turn_id = self.start_turn(text)
        first_new = len(self.messages)
        first_outcome = len(self.outcomes)
        run_state: str | None = None
        for _ in range(max_model_calls):
            outcome = await self.model_step(turn_id, run_state)
            if isinstance(outcome, TurnCompleted):
                break
            run_state = outcome.framework_run_state
            if isinstance(outcome, ToolCallsRequested):
                await self.run_tools(turn_id, outcome, decide)
        else:
            raise AssertionError(f"the turn made {max_model_calls} model steps without an answer")
        return TurnResult(
            self.outcomes[first_outcome:], list(self.records), self.messages[first_new:]
        )

    async def _settle(self, record: AgentToolCall, decision: Decision) -> AgentToolCall:
        if isinstance(decision, Reject):
            return record.model_copy(
                update={"status": "rejected", "rejection_message": decision.message}
            )
        if decision == "reject":
            return record.model_copy(update={"status": "rejected"})
        if decision == "outcome_unknown":
            return record.model_copy(update={"status": "outcome_unknown", "error": "killed"})
        return await self.execute(record)
