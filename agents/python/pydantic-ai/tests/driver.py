"""Drives a runner through turns in memory, the way the session Flow calls it.

It builds real AgentTurnContext and DeferredToolExecution values, keeps the stored messages and
tool call records, and lets a test decide each call's outcome. Runner tests use it to check the
runner alone; the Worker tests check the same behaviour through the real session.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from dex_agents.policy import idempotency_key
from dex_agents.runner import (
    AgentTurnContext,
    AgentTurnOutcome,
    DeferredToolCall,
    DeferredToolExecution,
    FrameworkItemCache,
    FrameworkMessage,
    ToolCallsRequested,
    ToolExecutionError,
    ToolPolicy,
    TurnCompleted,
    TurnContinued,
)
from dex_agents.types import AgentMessage, AgentToolCall, AgentUsage, ToolEffect

from dex_agents_pydantic_ai import PydanticAiRunner

Decision = Literal["run", "reject", "outcome_unknown"]


@dataclass
class EventLog:
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def write(self, type: str, payload: Mapping[str, Any]) -> None:
        self.events.append((type, dict(payload)))

    def texts(self, type: str = "text_delta") -> str:
        return "".join(payload["text"] for kind, payload in self.events if kind == type)


@dataclass
class TurnResult:
    outcomes: list[AgentTurnOutcome]
    records: list[AgentToolCall]
    new_messages: list[AgentMessage]

    @property
    def final(self) -> TurnCompleted:
        last = self.outcomes[-1]
        assert isinstance(last, TurnCompleted)
        return last


@dataclass
class Driver:
    runner: PydanticAiRunner[Any]
    tool_policies: dict[str, ToolPolicy] = field(default_factory=dict)
    default_tool_effect: ToolEffect = "unclassified"
    flow_id: str = "session-1"
    messages: list[AgentMessage] = field(default_factory=list)
    events: EventLog = field(default_factory=EventLog)
    usage: AgentUsage = field(default_factory=AgentUsage)
    turn_count: int = 0
    framework_items: FrameworkItemCache | None = None
    """The session's parsed-item memo, kept across turns as a Worker keeps it; None for none."""

    def append(self, turn_id: str, message: FrameworkMessage) -> AgentMessage:
        stored = AgentMessage(
            sequence=len(self.messages) + 1,
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
        self.messages.append(stored)
        return stored

    def context(
        self, turn_id: str, run_state: str | None, records: Sequence[AgentToolCall]
    ) -> AgentTurnContext:
        return AgentTurnContext(
            flow_id=self.flow_id,
            turn_id=turn_id,
            attempt=1,
            step_execution_id=f"RunModel-{turn_id}",
            messages=list(self.messages),
            framework_run_state=run_state,
            tool_calls=list(records),
            events=self.events,
            heartbeat=lambda: None,
            tool_policies=self.tool_policies,
            default_tool_effect=self.default_tool_effect,
            framework_items=(
                FrameworkItemCache() if self.framework_items is None else self.framework_items
            ),
        )

    def record(self, turn_id: str, call: DeferredToolCall, order: int) -> AgentToolCall:
        assert call.policy is not None and call.policy.effect is not None
        return AgentToolCall(
            tool_call_id=call.tool_call_id,
            turn_id=turn_id,
            tool_name=call.tool_name,
            arguments=call.arguments,
            effect=call.policy.effect,
            requires_approval=bool(call.policy.requires_approval),
            status="approved",
            deferral_order=order,
        )

    async def execute(self, record: AgentToolCall, attempt: int = 1) -> AgentToolCall:
        execution = DeferredToolExecution(
            flow_id=self.flow_id,
            turn_id=record.turn_id,
            step_execution_id=f"CallTool-{record.tool_call_id}",
            tool_call=record,
            idempotency_key=idempotency_key(self.flow_id, record.turn_id, record.tool_call_id),
            attempt=attempt,
            events=self.events,
            heartbeat=lambda: None,
            save_heartbeat_checkpoint=_no_checkpoint,
        )
        try:
            result = await self.runner.execute_deferred_tool_call(execution)
        except ToolExecutionError as error:
            return record.model_copy(update={"status": "failed", "error": str(error)})
        return record.model_copy(update={"status": "succeeded", "output": result.output})

    async def turn(
        self,
        text: str,
        decide: Callable[[AgentToolCall], Decision] = lambda record: "run",
        max_model_calls: int = 6,
    ) -> TurnResult:
        """One turn: model steps, each requested call settled by `decide`, until an answer."""
        self.turn_count += 1
        turn_id = f"turn-{self.turn_count}"
        first_new = len(self.messages) + 1
        self.append(turn_id, self.runner.build_user_message(text))
        outcomes: list[AgentTurnOutcome] = []
        run_state: str | None = None
        records: list[AgentToolCall] = []
        for _ in range(max_model_calls):
            outcome = await self.runner.run_model_step(self.context(turn_id, run_state, records))
            outcomes.append(outcome)
            if outcome.usage:
                self.usage = self.usage.plus(outcome.usage)
            if isinstance(outcome, TurnCompleted):
                for message in outcome.new_messages:
                    self.append(turn_id, message)
                break
            assert isinstance(outcome, ToolCallsRequested | TurnContinued)
            run_state = outcome.framework_run_state
            if isinstance(outcome, ToolCallsRequested):
                records = [
                    await self._settle(self.record(turn_id, call, order), decide)
                    for order, call in enumerate(outcome.tool_calls)
                ]
            else:
                records = []
        return TurnResult(outcomes, records, self.messages[first_new:])

    async def _settle(
        self, record: AgentToolCall, decide: Callable[[AgentToolCall], Decision]
    ) -> AgentToolCall:
        decision = decide(record)
        if decision == "reject":
            return record.model_copy(update={"status": "rejected"})
        if decision == "outcome_unknown":
            return record.model_copy(update={"status": "outcome_unknown", "error": "killed"})
        return await self.execute(record)


async def _no_checkpoint(checkpoint: str) -> None:
    return None
