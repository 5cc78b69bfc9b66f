"""The `adk_request_confirmation` calls a paused invocation waits for, and the answers that
resume it with each call's recorded result."""

from __future__ import annotations

from collections.abc import Sequence

from dex_agents.results import model_visible_result
from dex_agents.types import AgentToolCall
from google.adk.events import Event
from google.adk.flows.llm_flows.functions import REQUEST_CONFIRMATION_FUNCTION_CALL_NAME
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.genai import types

from .gate import PAYLOAD_RESULT, UnsupportedAgentError
from .run_state import RunState


def pending_confirmations(events: Sequence[Event]) -> dict[str, types.FunctionCall]:
    """The turn's unanswered `adk_request_confirmation` calls, by their ID."""
    asked = {
        call.id: call
        for event in events
        for call in event.get_function_calls()
        if call.name == REQUEST_CONFIRMATION_FUNCTION_CALL_NAME and call.id
    }
    answered = {r.id for event in events for r in event.get_function_responses()}
    originals: dict[str, types.FunctionCall] = {}
    for conf_id, call in asked.items():
        if conf_id in answered:
            continue
        original = (call.args or {}).get("originalFunctionCall")
        if not isinstance(original, dict):
            raise UnsupportedAgentError(f"confirmation {conf_id!r} names no function call")
        originals[conf_id] = types.FunctionCall.model_validate(original)
    return originals


def confirmation_answers(saved: RunState, records: Sequence[AgentToolCall]) -> types.Content:
    """The user's answer to the pending confirmations: each carries the call's final record's
    model-visible result (its output, its failure, or the rejection text)."""
    by_id = {record.tool_call_id: record for record in records}
    parts: list[types.Part] = []
    for call_id, confirmation_id in saved.confirmations.items():
        record = by_id.get(call_id)
        if record is None or not record.is_final:
            raise RuntimeError(f"tool call {call_id!r} has no final record to resume the turn with")
        confirmation = ToolConfirmation(
            confirmed=record.status != "rejected",
            payload={PAYLOAD_RESULT: model_visible_result(record)},
        )
        parts.append(
            types.Part(
                function_response=types.FunctionResponse(
                    id=confirmation_id,
                    name=REQUEST_CONFIRMATION_FUNCTION_CALL_NAME,
                    response=confirmation.model_dump(by_alias=True, exclude_none=True),
                )
            )
        )
    return types.Content(role="user", parts=parts)
