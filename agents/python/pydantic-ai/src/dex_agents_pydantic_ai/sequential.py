"""Tools marked `sequential=True` run as barriers, as Pydantic AI runs them: the calls the model
made before one finish first, and the calls after it start only once it finished.

The session runs the calls of one `ToolCallsRequested` as parallel Steps, so the runner hands
them over a group at a time: the calls up to the first sequential one, the sequential one
alone, the calls up to the next, and so on. The groups after the first wait in the run state
(`RunState.held`); each following RunModel Step returns the next group without calling the
model, and the model is called again once every group has run (and its results are in).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from dex_agents.runner import DeferredToolCall, ToolPolicy

HeldCall = dict[str, Any]
"""A call held back, as JSON: its DeferredToolCall's fields and whether it is a barrier."""


def barrier_groups(
    calls: Sequence[DeferredToolCall], is_sequential: Callable[[str], bool]
) -> list[list[DeferredToolCall]]:
    """The calls in groups that may run in parallel, in the model's order."""
    groups: list[list[DeferredToolCall]] = []
    for call in calls:
        if is_sequential(call.tool_name):
            groups += [[call], []]
        elif groups:
            groups[-1].append(call)
        else:
            groups.append([call])
    return [group for group in groups if group]


def hold(groups: Sequence[Sequence[DeferredToolCall]]) -> tuple[HeldCall, ...]:
    """The groups after the first, as the run state keeps them."""
    return tuple(
        _held(call, group_index) for group_index, group in enumerate(groups[1:]) for call in group
    )


def next_group(held: Sequence[HeldCall]) -> tuple[list[DeferredToolCall], tuple[HeldCall, ...]]:
    """The first held group as calls, and what stays held."""
    first = held[0]["group"]
    group = [_call(entry) for entry in held if entry["group"] == first]
    return group, tuple(entry for entry in held if entry["group"] != first)


def _held(call: DeferredToolCall, group: int) -> HeldCall:
    policy = call.policy or ToolPolicy()
    return {
        "group": group,
        "tool_call_id": call.tool_call_id,
        "tool_name": call.tool_name,
        "arguments": call.arguments,
        "effect": policy.effect,
        "requires_approval": policy.requires_approval,
        "tool_source_reference": call.tool_source_reference,
    }


def _call(entry: HeldCall) -> DeferredToolCall:
    return DeferredToolCall(
        tool_call_id=entry["tool_call_id"],
        tool_name=entry["tool_name"],
        arguments=entry["arguments"],
        policy=ToolPolicy(effect=entry["effect"], requires_approval=entry["requires_approval"]),
        tool_source_reference=entry["tool_source_reference"],
    )
