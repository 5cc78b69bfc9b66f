"""Fixtures for Stepwise runner tests: a scripted model server that LiteLLM really calls over
HTTP, and turn contexts built the way the session builds them."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from dex_agents.runner import (
    AgentTurnContext,
    DeferredToolExecution,
    FrameworkMessage,
    ToolCallsRequested,
    ToolExecutionError,
    ToolExecutionResult,
    ToolInputRequested,
    ToolPolicy,
)
from dex_agents.stepwise import ModelClient
from dex_agents.testing import ScriptedModelServer, _loopback, model_server
from dex_agents.testing.driver import stored_message
from dex_agents.types import AgentMessage, AgentPlan, AgentToolCall, ContextSummary

# LiteLLM's own warnings: pydantic deprecations in its response types, ReadOnly TypedDicts.
LITELLM_NOISE = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm"),
    pytest.mark.filterwarnings("ignore:.*ReadOnly. qualifier:UserWarning"),
]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedModelServer]:
    """The scripted server, streaming ScriptedReply.reasoning as Chat Completions
    `reasoning_content` deltas (as DeepSeek and LiteLLM-proxied reasoning models do)."""
    original = model_server._ChatCompletion.chunks

    def chunks(self: Any, include_usage: bool) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = original(self, include_usage)
        if self.reply.reasoning:
            pieces = _loopback.pieces(self.reply.reasoning, 2)
            out[1:1] = [
                self._chunk({"reasoning_content": piece}, None, include_usage) for piece in pieces
            ]
        return out

    monkeypatch.setattr(model_server._ChatCompletion, "chunks", chunks)
    with ScriptedModelServer() as started:
        yield started


@pytest.fixture
def model_client(server: ScriptedModelServer) -> ModelClient:
    return ModelClient("openai/scripted-model", api_base=server.base_url, api_key="test")


@dataclass
class Events:
    """An event writer that records what the runner writes."""

    written: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def write(self, type: str, payload: Mapping[str, Any]) -> None:
        self.written.append((type, dict(payload)))

    def texts(self, type: str) -> list[str]:
        return [payload["text"] for kind, payload in self.written if kind == type]


@dataclass
class Session:
    """A minimal stand-in for the session's bookkeeping around one turn."""

    turn_id: str = "turn-1"
    messages: list[AgentMessage] = field(default_factory=list)
    run_state: str | None = None
    records: list[AgentToolCall] = field(default_factory=list)
    events: Events = field(default_factory=Events)
    enabled_built_in_tools: tuple[str, ...] = ()
    interaction_mode: str = "chat"
    plan: AgentPlan | None = None
    summary: ContextSummary | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    tool_policies: dict[str, ToolPolicy] = field(default_factory=dict)

    def store(self, messages: Sequence[FrameworkMessage], turn_id: str | None = None) -> None:
        for message in messages:
            sequence = len(self.messages) + 1
            self.messages.append(stored_message(message, sequence, turn_id or self.turn_id))

    def turn(self) -> AgentTurnContext:
        return AgentTurnContext(
            flow_id="session-1",
            turn_id=self.turn_id,
            attempt=1,
            step_execution_id="RunModel-1",
            messages=list(self.messages),
            framework_run_state=self.run_state,
            tool_calls=list(self.records),
            events=self.events,
            heartbeat=lambda: None,
            tool_policies=self.tool_policies,
            default_tool_effect="unclassified",
            enabled_built_in_tools=self.enabled_built_in_tools,
            session_settings=self.settings,
            interaction_mode=self.interaction_mode,  # type: ignore[arg-type]
            plan=self.plan,
            context_summary=self.summary,
        )

    def request_tools(self, outcome: ToolCallsRequested) -> None:
        """What RunModel's commit does: keep the run state, record each call."""
        self.run_state = outcome.framework_run_state
        for order, call in enumerate(outcome.tool_calls):
            policy = call.policy or ToolPolicy()
            self.records.append(
                AgentToolCall(
                    tool_call_id=call.tool_call_id,
                    turn_id=self.turn_id,
                    tool_name=call.tool_name,
                    arguments=call.arguments,
                    effect=policy.effect or "unclassified",
                    requires_approval=bool(policy.requires_approval),
                    status="approved",
                    deferral_order=order,
                )
            )

    def finish(self, tool_call_id: str, **fields: Any) -> None:
        self.records = [
            r.model_copy(update=fields) if r.tool_call_id == tool_call_id else r
            for r in self.records
        ]

    def execution(self, record: AgentToolCall) -> DeferredToolExecution:
        async def save(_: str) -> None:
            return None

        return DeferredToolExecution(
            flow_id="session-1",
            turn_id=self.turn_id,
            step_execution_id=f"CallTool-{record.tool_call_id}",
            tool_call=record,
            idempotency_key=f"session-1/{self.turn_id}/{record.tool_call_id}",
            attempt=1,
            events=self.events,
            heartbeat=lambda: None,
            save_heartbeat_checkpoint=save,
        )

    async def run_tools(self, runner: Any) -> None:
        """Each approved call runs once, as its tool Step would."""
        for record in list(self.records):
            if record.status != "approved":
                continue
            try:
                outcome = await runner.execute_deferred_tool_call(self.execution(record))
            except ToolExecutionError as error:
                self.finish(record.tool_call_id, status="failed", error=str(error))
                continue
            if isinstance(outcome, ToolInputRequested):
                self.finish(record.tool_call_id, status="awaiting_answer")
                continue
            assert isinstance(outcome, ToolExecutionResult)
            self.finish(record.tool_call_id, status="succeeded", output=outcome.output)


def request_messages(server: ScriptedModelServer, index: int = -1) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = server.requests[index].body["messages"]
    return messages


def item(message: FrameworkMessage) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(message.framework_item)
    return parsed
