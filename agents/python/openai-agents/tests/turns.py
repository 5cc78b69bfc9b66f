"""A minimal stand-in for the session around a runner: it stores messages and tool call
records the way the session does and calls the runner's three methods, so runner tests need no
engine. Everything inside the runner is real: the SDK, its OpenAI client, the scripted server."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

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
)
from dex_agents.types import AgentMessage, AgentToolCall, ToolEffect

from dex_agents_openai_agents import OpenAIAgentsRunner


def approved_record(turn_id: str, call: DeferredToolCall, deferral_order: int) -> AgentToolCall:
    """The record the session keeps for a deferred call once it may run."""
    policy = call.policy or ToolPolicy()
    return AgentToolCall(
        tool_call_id=call.tool_call_id,
        turn_id=turn_id,
        tool_name=call.tool_name,
        arguments=call.arguments,
        effect=policy.effect or "unclassified",
        requires_approval=bool(policy.requires_approval),
        status="approved",
        deferral_order=deferral_order,
        tool_source_reference=call.tool_source_reference,
    )


class RecordingEvents:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def write(self, type: str, payload: Mapping[str, Any]) -> None:
        self.events.append((type, dict(payload)))

    def of_type(self, type: str) -> list[dict[str, Any]]:
        return [payload for kind, payload in self.events if kind == type]


# A decision for one deferred call: run it (None) or reject it with a message ("" = default).
Decide = Callable[[AgentToolCall], str | None]


@dataclass
class FakeSession:
    runner: OpenAIAgentsRunner
    flow_id: str = "session-1"
    tool_policies: dict[str, ToolPolicy] = field(default_factory=dict)
    default_tool_effect: ToolEffect = "unclassified"
    messages: list[AgentMessage] = field(default_factory=list)
    events: RecordingEvents = field(default_factory=RecordingEvents)
    outcomes: list[AgentTurnOutcome] = field(default_factory=list)
    records: list[AgentToolCall] = field(default_factory=list)
    turn_count: int = 0
    framework_items: FrameworkItemCache = field(default_factory=FrameworkItemCache)
    """The session's parsed-item memo, kept across turns as a Worker keeps it."""
    _sequence: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def append(self, turn_id: str, messages: Sequence[FrameworkMessage]) -> None:
        for message in messages:
            self.messages.append(
                AgentMessage(
                    sequence=next(self._sequence),
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
            )

    def context(
        self, turn_id: str, run_state: str | None, records: Sequence[AgentToolCall]
    ) -> AgentTurnContext:
        return AgentTurnContext(
            flow_id=self.flow_id,
            turn_id=turn_id,
            attempt=1,
            step_execution_id=f"RunModel-{len(self.outcomes) + 1}",
            messages=list(self.messages),
            framework_run_state=run_state,
            tool_calls=list(records),
            events=self.events,
            heartbeat=lambda: None,
            tool_policies=self.tool_policies,
            default_tool_effect=self.default_tool_effect,
            framework_items=self.framework_items,
        )

    def start_turn(self, text: str) -> str:
        self.turn_count += 1
        turn_id = f"turn-{self.turn_count}"
        self.append(turn_id, [self.runner.build_user_message(text)])
        return turn_id

    async def model_step(
        self, turn_id: str, run_state: str | None, records: Sequence[AgentToolCall]
    ) -> AgentTurnOutcome:
        outcome = await self.runner.run_model_step(self.context(turn_id, run_state, records))
        self.outcomes.append(outcome)
        return outcome

    def execution(
        self, turn_id: str, record: AgentToolCall, attempt: int = 1
    ) -> DeferredToolExecution:
        async def save_checkpoint(_checkpoint: str) -> None:
            return None

        return DeferredToolExecution(
            flow_id=self.flow_id,
            turn_id=turn_id,
            step_execution_id=f"CallTool-{record.tool_call_id}",
            tool_call=record,
            idempotency_key=f"{self.flow_id}/{turn_id}/{record.tool_call_id}",
            attempt=attempt,
            events=self.events,
            heartbeat=lambda: None,
            save_heartbeat_checkpoint=save_checkpoint,
        )

    async def run_tools(
        self, turn_id: str, requested: ToolCallsRequested, decide: Decide | None
    ) -> list[AgentToolCall]:
        final: list[AgentToolCall] = []
        for call in requested.tool_calls:
            record = approved_record(turn_id, call, len(self.records))
            self.records.append(record)
            rejection = decide(record) if decide is not None else None
            if rejection is not None:
                final.append(
                    record.model_copy(
                        update={"status": "rejected", "rejection_message": rejection or None}
                    )
                )
                continue
            try:
                result = await self.runner.execute_deferred_tool_call(
                    self.execution(turn_id, record)
                )
            except ToolExecutionError as error:
                final.append(record.model_copy(update={"status": "failed", "error": str(error)}))
            else:
                final.append(
                    record.model_copy(update={"status": "succeeded", "output": result.output})
                )
        return final

    async def turn(self, text: str, decide: Decide | None = None) -> TurnCompleted:
        """One whole turn: model Steps and tool Steps until the final answer."""
        turn_id = self.start_turn(text)
        run_state: str | None = None
        records: list[AgentToolCall] = []
        while True:
            outcome = await self.model_step(turn_id, run_state, records)
            if isinstance(outcome, TurnCompleted):
                self.append(turn_id, outcome.new_messages)
                return outcome
            assert isinstance(outcome, ToolCallsRequested)
            run_state = outcome.framework_run_state
            records += await self.run_tools(turn_id, outcome, decide)
