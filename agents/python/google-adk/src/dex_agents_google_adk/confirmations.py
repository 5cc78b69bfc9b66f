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
from .tool_actions import PAYLOAD_ACTIONS


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


def confirmation_answers(saved: RunState, records: Sequence[AgentToolCall]) -> list[Event]:
    """The answers to the pending confirmations, as the user events ADK would append: each
    carries the call's final record's model-visible result (its output, its failure, or the
    rejection text) and a succeeded call's carried actions (its record's framework data).

    One event per branch: under a `ParallelAgent` each child reads only the events of its own
    branch, so the answers to its confirmations are in an event of that branch, as ADK gives
    a function response the branch of the call it answers."""
    by_id = {record.tool_call_id: record for record in records}
    branches = {
        call.id: event.branch for event in saved.events for call in event.get_function_calls()
    }
    parts: dict[str | None, list[types.Part]] = {}
    for call_id, confirmation_id in saved.confirmations.items():
        record = by_id.get(call_id)
        if record is None or not record.is_final:
            raise RuntimeError(f"tool call {call_id!r} has no final record to resume the turn with")
        payload: dict[str, str] = {PAYLOAD_RESULT: model_visible_result(record)}
        if record.status == "succeeded" and record.framework_data is not None:
            payload[PAYLOAD_ACTIONS] = record.framework_data
        confirmation = ToolConfirmation(confirmed=record.status != "rejected", payload=payload)
        part = types.Part(
            function_response=types.FunctionResponse(
                id=confirmation_id,
                name=REQUEST_CONFIRMATION_FUNCTION_CALL_NAME,
                response=confirmation.model_dump(by_alias=True, exclude_none=True),
            )
        )
        parts.setdefault(branches.get(confirmation_id), []).append(part)
    return [
        Event(
            author="user",
            invocation_id=saved.invocation_id,
            branch=branch,
            content=types.Content(role="user", parts=branch_parts),
        )
        for branch, branch_parts in parts.items()
    ]
