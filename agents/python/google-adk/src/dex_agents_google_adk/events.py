"""Stored messages as ADK session events (`Event` JSON), and the projection of a turn's events.

The stored conversation is what later turns replay: the user's messages, the model's answers
and function calls, and one function response per call. The events a paused invocation adds
for its own bookkeeping (the `adk_request_confirmation` calls and answers, and the gates'
pending responses) stay in the turn's run state and are never stored.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from dex_agents.runner import AgentTurnContext, FrameworkMessage
from dex_agents.types import AgentMessage
from google.adk.events import Event
from google.adk.flows.llm_flows.functions import REQUEST_CONFIRMATION_FUNCTION_CALL_NAME
from google.genai import types

from .artifacts import add_parts, stored_json, without_parts


def encode_event(event: Event) -> str:
    return event.model_dump_json(exclude_none=True, by_alias=True)


def decode_event(framework_item: str) -> Event:
    return Event.model_validate_json(framework_item)


def stored_events(turn: AgentTurnContext, messages: Sequence[AgentMessage]) -> list[Event]:
    """The stored messages as events, parsed once per session; each a copy ADK may change."""
    return [turn.parsed(m, decode_event).model_copy(deep=True) for m in messages]


def user_content(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part.from_text(text=text)])


def user_event(text: str) -> Event:
    return Event(author="user", invocation_id="", content=user_content(text))


def user_message(text: str) -> FrameworkMessage:
    return FrameworkMessage(role="user", text=text, framework_item=encode_event(user_event(text)))


def response_text(response: dict[str, Any] | None) -> str:
    """What a function response says: its `result` when that is all it holds (ADK's wrapping
    of a tool's plain return value), else its JSON."""
    if response is not None and set(response) == {"result"}:
        result = response["result"]
        return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
    return json.dumps(response, ensure_ascii=False)


def _is_bookkeeping(event: Event, part: types.Part) -> bool:
    """A confirmation call or answer, or a gate's pending response (the response of a call
    whose confirmation the event requests)."""
    call, response = part.function_call, part.function_response
    if call is not None and call.name == REQUEST_CONFIRMATION_FUNCTION_CALL_NAME:
        return True
    if response is not None:
        return (
            response.name == REQUEST_CONFIRMATION_FUNCTION_CALL_NAME
            or response.id in event.actions.requested_tool_confirmations
        )
    return False


def kept_events(events: Iterable[Event]) -> list[Event]:
    """The turn's events that later turns replay, each function response its own event.

    What an event that is not replayed did stays with what is replayed: its state changes
    (an agent callback's, on an event with only actions) and the artifacts it saved
    (`artifacts.py`) go on the next replayed event, before its own (they came first), or on
    the last one when none follows; an event split into one event per function response
    keeps its artifacts on its first."""
    kept: list[Event] = []
    parts: list[dict[str, list[Any]]] = []
    state: dict[str, Any] = {}
    """What the events left out since the last kept one saved and wrote, in order."""
    for event in events:
        pieces = _kept_pieces(event)
        if not pieces:
            parts.append(stored_json(event))
            state.update(event.actions.state_delta)
            continue
        first, *rest = [without_parts(p) for p in pieces]
        for saved in [*parts, stored_json(event)]:
            add_parts(first, saved)
        _add_state(first, state, before=True)
        parts, state = [], {}
        kept += [first, *rest]
    if kept:
        for saved in parts:
            add_parts(kept[-1], saved)
        _add_state(kept[-1], state, before=False)
    return kept


def _add_state(event: Event, delta: dict[str, Any], *, before: bool) -> None:
    """Adds `delta` to the event's state changes: applied before its own, or after them."""
    if not delta:
        return
    own = event.actions.state_delta
    merged = {**delta, **own} if before else {**own, **delta}
    event.actions = event.actions.model_copy(update={"state_delta": merged})


def _kept_pieces(event: Event) -> list[Event]:
    """The event as it is replayed: none, itself without the bookkeeping parts, or one event
    per function response."""
    if event.partial or event.content is None or not event.content.parts:
        return []
    parts = [p for p in event.content.parts if not _is_bookkeeping(event, p)]
    if not parts:
        return []
    if all(p.function_response is not None for p in parts) and len(parts) > 1:
        return [_with_parts(event, [p]) for p in parts]
    return [_with_parts(event, parts)]


def _with_parts(event: Event, parts: list[types.Part]) -> Event:
    content = types.Content(role=event.content.role if event.content else None, parts=parts)
    return event.model_copy(update={"content": content})


def _text(event: Event) -> str | None:
    parts = event.content.parts if event.content and event.content.parts else []
    text = "".join(p.text for p in parts if p.text and not p.thought)
    return text or None


def project_event(event: Event) -> FrameworkMessage:
    """The stored projection of one event: role, display text and tool fields. A model event
    carries its first function call's fields; every call stays in the framework item."""
    encoded = encode_event(event)
    responses = event.get_function_responses()
    if responses:
        response = responses[0]
        return FrameworkMessage(
            role="tool",
            framework_item=encoded,
            tool_call_id=response.id,
            tool_name=response.name,
            tool_output=response_text(response.response),
        )
    if event.author == "user":
        return FrameworkMessage(role="user", framework_item=encoded, text=_text(event))
    calls = event.get_function_calls()
    first = calls[0] if calls else None
    return FrameworkMessage(
        role="assistant",
        framework_item=encoded,
        text=_text(event),
        tool_call_id=first.id if first else None,
        tool_name=first.name if first else None,
        tool_arguments=json.dumps(first.args or {}, ensure_ascii=False) if first else None,
    )


def project_events(events: Iterable[Event]) -> list[FrameworkMessage]:
    return [project_event(e) for e in kept_events(events)]


def function_response_event(call_event: Event, call: types.FunctionCall, text: str) -> Event:
    """The response to `call` that a tool returning `text` makes, as ADK records it."""
    response = types.FunctionResponse(id=call.id, name=call.name, response={"result": text})
    return Event(
        author=call_event.author,
        invocation_id=call_event.invocation_id,
        branch=call_event.branch,
        content=types.Content(role="user", parts=[types.Part(function_response=response)]),
    )
