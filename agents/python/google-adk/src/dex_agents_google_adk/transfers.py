"""Which agent of the tree made a function call, and the transfers between agents.

A turn's events say who made each call (`Event.author`, and `Event.branch` under a
`ParallelAgent`): a tool call is looked up among that agent's tools, and its tool Step's
`ToolContext` is that agent's. A transfer (`transfer_to_agent`, which ADK runs inside the
RunModel Step: it only sets `EventActions.transfer_to_agent`) is reported to the session's
event stream as `google_adk.transfer`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

from google.adk.agents import BaseAgent
from google.adk.events import Event
from google.adk.flows.llm_flows.functions import REQUEST_CONFIRMATION_FUNCTION_CALL_NAME

TRANSFER_EVENT: Final = "google_adk.transfer"
"""The session event written when control passes to another agent of the tree."""

TRANSFER_TOOL: Final = "transfer_to_agent"


def call_authors(events: Iterable[Event]) -> dict[str, Event]:
    """The event that made each function call of `events` (confirmation calls left out), by
    the call's ID."""
    return {
        call.id: event
        for event in events
        for call in event.get_function_calls()
        if call.id and call.name != REQUEST_CONFIRMATION_FUNCTION_CALL_NAME
    }


def call_event(events: Sequence[Event], call_id: str) -> Event | None:
    """The event that made the call `call_id`, if `events` hold it."""
    return call_authors(events).get(call_id)


def transfer_payload(event: Event) -> dict[str, Any] | None:
    """The `google_adk.transfer` payload of a transfer's function response event: from the
    agent that called `transfer_to_agent` to the agent it named; None for another event."""
    target = event.actions.transfer_to_agent
    if event.partial or not target:
        return None
    calls = [r for r in event.get_function_responses() if r.name == TRANSFER_TOOL]
    return {
        "from_agent": event.author,
        "to_agent": target,
        "tool_call_id": calls[0].id if calls else None,
    }


def without_premature_ends(
    events: list[Event], pending: Iterable[str], root: BaseAgent
) -> list[Event]:
    """`events` without the `end_of_agent` marks, after a pending confirmation call (of the
    IDs in `pending`), of the agent that asked for it or of one of its ancestors.

    An `LlmAgent` that resumes a sub-agent it transferred to marks itself ended once that
    sub-agent's run returns, even when the sub-agent paused on a gate's confirmation: the
    next Step would then find the invocation over and not resume it. An agent cannot be done
    while an agent under it waits, so those marks are dropped."""
    waiting = set(pending)
    kept: list[Event] = []
    paused: set[str] = set()
    for event in events:
        if event.actions.end_of_agent and event.content is None and event.author in paused:
            continue
        kept.append(event)
        if any(c.id in waiting for c in event.get_function_calls()):
            paused |= _lineage(root, event.author)
    return kept


def _lineage(root: BaseAgent, name: str) -> set[str]:
    """`name` and the names of its ancestors in the tree."""
    agent = root.find_agent(name)
    names: set[str] = set()
    while agent is not None:
        names.add(agent.name)
        agent = agent.parent_agent
    return names
