"""Which agent of the tree made a function call, and the transfers between agents.

A turn's events say who made each call (`Event.author`, and `Event.branch` under a
`ParallelAgent`): a tool call is looked up among that agent's tools, and its tool Step's
`ToolContext` is that agent's. A transfer (`transfer_to_agent`, which ADK runs inside the
RunModel Step: it only sets `EventActions.transfer_to_agent`) is reported to the session's
event stream as `google_adk.transfer`, and so is a tool's transfer, which the RunModel Step
that resumes the turn with the call's result runs (`pending_transfer`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

from google.adk.agents import BaseAgent, InvocationContext
from google.adk.events import Event
from google.adk.flows.llm_flows.functions import REQUEST_CONFIRMATION_FUNCTION_CALL_NAME

from ._compat import current_branch_events, matching_call
from .artifacts import add_parts, stored_json

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
    agent that called `transfer_to_agent` (or a tool that set the transfer) to the agent it
    named, with that call's ID (the event's first response's, for a tool's transfer); None
    for another event."""
    target = event.actions.transfer_to_agent
    if event.partial or not target:
        return None
    responses = event.get_function_responses()
    calls = [r for r in responses if r.name == TRANSFER_TOOL] or responses[:1]
    return {
        "from_agent": event.author,
        "to_agent": target,
        "tool_call_id": calls[0].id if calls else None,
    }


def transfer_target(event: Event, agent_name: str) -> str | None:
    """The agent `event` transfers to, when it is `agent_name`'s function response whose
    actions transfer to another agent: ADK's `transfer_to_agent`, or a tool that set
    `tool_context.actions.transfer_to_agent` (its transfer carried from its tool Step)."""
    target = event.actions.transfer_to_agent
    if event.author != agent_name or not event.get_function_responses():
        return None
    return None if target in (None, agent_name) else target


def pending_transfer(invocation: InvocationContext) -> str | None:
    """The agent a transfer names that has not run yet: the last event of the invocation's
    branch is a transfer of the current agent (`transfer_target`). ADK runs the target of
    its own `transfer_to_agent` right after the response; a tool's transfer, resumed from
    its tool Step, is left here."""
    events = current_branch_events(invocation)
    return transfer_target(events[-1], invocation.agent.name) if events else None


def transfer_to_resume(invocation: InvocationContext) -> str | None:
    """The agent a resumed agent goes on with, as ADK's `_get_subagent_to_resume` finds it,
    a tool's transfer included: the transfer of its last event, if that event is its own;
    none if the last event answers a call of its own; else the last agent it transferred to
    in the invocation's branch."""
    events = current_branch_events(invocation)
    if not events:
        return None
    last, name = events[-1], invocation.agent.name
    if last.author == name:
        return transfer_target(last, name)
    if last.author == "user":
        made = matching_call(invocation, last)
        if made is None or made.author == name:
            return None
    return next((t for e in reversed(events) if (t := transfer_target(e, name)) is not None), None)


def without_premature_ends(
    events: list[Event], pending: Iterable[str], root: BaseAgent
) -> list[Event]:
    """`events` without the `end_of_agent` marks, after a pending confirmation call (of the
    IDs in `pending`), of the agent that asked for it or of one of its ancestors.

    An `LlmAgent` that resumes a sub-agent it transferred to marks itself ended once that
    sub-agent's run returns, even when the sub-agent paused on a gate's confirmation: the
    next Step would then find the invocation over and not resume it. An agent cannot be done
    while an agent under it waits, so those marks are dropped (the artifacts one saved go on
    the event before it)."""
    waiting = set(pending)
    kept: list[Event] = []
    paused: set[str] = set()
    for event in events:
        if event.actions.end_of_agent and event.content is None and event.author in paused:
            if kept:  # what it saved (`artifacts.py`) goes on the event before it
                add_parts(kept[-1], stored_json(event))
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
