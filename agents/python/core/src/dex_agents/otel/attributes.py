"""The attributes of dex-agents' spans (the README's "Tracing" section lists each one).

GenAI attributes follow the pinned semantic conventions: by default
open-telemetry/semantic-conventions-genai at commit dc3571562603552dc555c667dfa327a638d94ab2
(schema 1.42.0-dev); with DEX_AGENTS_OTEL_SEMCONV=1.36.0, OpenTelemetry semantic conventions
1.36.0, which name the provider `gen_ai.system` instead of `gen_ai.provider.name`. Content is
by reference by default (message sequence keys, tool call IDs); message and tool content only
when capture is on.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..runner import (
    ContextSummaryResult,
    FrameworkMessage,
    ModelCallMetadata,
    ToolCallsRequested,
    ToolExecutionResult,
    TurnCompleted,
    TurnContinued,
)
from ..steps.tools import ToolFailed
from ..types import AgentMessage, AgentToolCall, AgentUsage

Attributes = dict[str, str | int | bool | Sequence[str]]

LATEST = "latest"
COMPATIBILITY = "1.36.0"


@dataclass(frozen=True)
class Conventions:
    name: str
    schema_url: str
    provider_attribute: str

    @staticmethod
    def named(name: str) -> Conventions:
        if name == LATEST:
            return Conventions(
                LATEST, "https://opentelemetry.io/schemas/1.42.0-dev", "gen_ai.provider.name"
            )
        if name == COMPATIBILITY:
            return Conventions(
                COMPATIBILITY, "https://opentelemetry.io/schemas/1.36.0", "gen_ai.system"
            )
        raise ValueError(
            f"DEX_AGENTS_OTEL_SEMCONV is {name!r}; use {LATEST!r} or {COMPATIBILITY!r}"
        )


def common(ctx: Any, turn_id: str | None) -> Attributes:
    """What every span carries: the Flow ID three ways, the run, the Step, its attempt, the
    turn."""
    found: Attributes = {
        "gen_ai.conversation.id": ctx.session_id,
        "session.id": ctx.session_id,
        "dex.flow.id": ctx.session_id,
        "dex.flow.type": ctx.flow.flow_type,
        "dex.run.id": f"{ctx.session_id}/{ctx.step_execution_id}",
        "dex.step.type": ctx.step_type,
        "dex.step.execution_id": ctx.step_execution_id,
        "dex.step.attempt": max(ctx.attempt, 1),
    }
    if turn_id is not None:
        found["dex.agent.turn.id"] = turn_id
    return found


def invoke_agent(agent_name: str) -> Attributes:
    return {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent_name}


def chat(
    conventions: Conventions, metadata: ModelCallMetadata | None, usage: AgentUsage | None
) -> Attributes:
    """The model call's names from ModelCallMetadata; its usage only for one model call."""
    found: Attributes = {"gen_ai.operation.name": "chat"}
    if metadata is not None:
        optional = {
            conventions.provider_attribute: metadata.provider_name,
            "gen_ai.request.model": metadata.request_model,
            "gen_ai.response.model": metadata.response_model,
            "gen_ai.response.id": metadata.response_id,
        }
        found.update({key: value for key, value in optional.items() if value})
        if metadata.finish_reasons:
            found["gen_ai.response.finish_reasons"] = list(metadata.finish_reasons)
    if usage is not None:
        found["gen_ai.usage.input_tokens"] = usage.input_tokens
        found["gen_ai.usage.output_tokens"] = usage.output_tokens
        if usage.cached_input_tokens:
            found["gen_ai.usage.cache_read.input_tokens"] = usage.cached_input_tokens
        if usage.reasoning_tokens:
            found["gen_ai.usage.reasoning.output_tokens"] = usage.reasoning_tokens
    return found


def chat_content(loaded: Any, outcome: Any, capture: bool) -> Attributes:
    """By reference: the sequences of the stored messages the call saw and the IDs of the
    tool calls it asked for; with capture on, the messages themselves and the model's reply."""
    messages: list[AgentMessage] = list(getattr(loaded, "messages", None) or [])
    found: Attributes = {}
    if messages:
        found["dex.input.messages.first_sequence"] = messages[0].sequence
        found["dex.input.messages.last_sequence"] = messages[-1].sequence
    if isinstance(outcome, ToolCallsRequested):
        found["dex.tool_call.ids"] = [call.tool_call_id for call in outcome.tool_calls]
    if capture and messages:
        found["gen_ai.input.messages"] = json.dumps([_message(m) for m in messages])
    output = _output(outcome) if capture else None
    if output:
        found["gen_ai.output.messages"] = json.dumps(output)
    return found


def _output(outcome: Any) -> list[dict[str, Any]]:
    """The model's reply: the calls it asked for, its trailing assistant messages, a summary."""
    if isinstance(outcome, ToolCallsRequested):
        parts = [
            {
                "type": "tool_call",
                "id": c.tool_call_id,
                "name": c.tool_name,
                "arguments": c.arguments,
            }
            for c in outcome.tool_calls
        ]
        return [{"role": "assistant", "parts": parts}]
    if isinstance(outcome, TurnCompleted | TurnContinued):
        reply: list[FrameworkMessage] = []
        for message in reversed(outcome.new_messages):
            if message.role != "assistant":
                break
            reply.insert(0, message)
        return [_message(m) for m in reply]
    if isinstance(outcome, ContextSummaryResult):
        return [{"role": "assistant", "parts": [{"type": "text", "content": outcome.text}]}]
    return []


def _message(message: AgentMessage | FrameworkMessage) -> dict[str, Any]:
    if message.role == "tool" or message.tool_output is not None:
        part: dict[str, Any] = {
            "type": "tool_call_response",
            "id": message.tool_call_id,
            "response": message.tool_output,
        }
    elif message.tool_name is not None:
        part = {
            "type": "tool_call",
            "id": message.tool_call_id,
            "name": message.tool_name,
            "arguments": message.tool_arguments,
        }
    else:
        part = {"type": "text", "content": message.text or ""}
    return {"role": message.role, "parts": [part]}


def execute_tool(record: AgentToolCall, result: object, capture: bool) -> Attributes:
    found: Attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": record.tool_name,
        "gen_ai.tool.call.id": record.tool_call_id,
        "gen_ai.tool.type": "function",
        "dex.tool.effect": record.effect,
    }
    if capture:
        found["gen_ai.tool.call.arguments"] = record.arguments
        if isinstance(result, ToolExecutionResult):
            found["gen_ai.tool.call.result"] = result.output
    return found


def tool_failure(result: object) -> str | None:
    """The error of a tool failure the model sees (a ToolExecutionError), if the result is one."""
    return result.error if isinstance(result, ToolFailed) else None
