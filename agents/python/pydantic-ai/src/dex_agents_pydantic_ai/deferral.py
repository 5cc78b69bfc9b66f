"""Deferring every tool call of a model step, and the policy of each deferred call.

`DeferAllTools` is a run capability the runner adds to the agent's run: it makes every function
tool `external`, so Pydantic AI validates each call's arguments and returns the calls as
`DeferredToolRequests` instead of running them. Tools that need approval stay `unapproved`, which
Pydantic AI defers as well. The user's agent is not changed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from dex_agents.policy import declared_effect
from dex_agents.runner import AgentTurnContext, DeferredToolCall
from dex_agents.types import ToolEffect
from pydantic_ai import DeferredToolRequests, RunContext, ToolDefinition
from pydantic_ai.capabilities import AbstractCapability

SourceCall = Callable[[str, str, str], DeferredToolCall | None]
"""(tool_call_id, tool_name, arguments) -> a tool source's DeferredToolCall, or None."""


@dataclass(kw_only=True)
class ToolCatalog(AbstractCapability[Any]):
    """Records the tool definitions of the run's last step; with `defer`, defers every call;
    with `only`, offers only the tools of those names (a planning turn's write_todos)."""

    defer: bool
    only: frozenset[str] | None = None
    tools: dict[str, ToolDefinition] = field(default_factory=dict)
    output_tool_names: set[str] = field(default_factory=set)

    async def prepare_tools(
        self, ctx: RunContext[Any], tool_defs: list[ToolDefinition]
    ) -> list[ToolDefinition]:
        if self.only is not None:
            tool_defs = [tool_def for tool_def in tool_defs if tool_def.name in self.only]
        self.tools = {tool_def.name: tool_def for tool_def in tool_defs}
        for tool_def in tool_defs:  # a misspelt effect fails before the model is called
            framework_effect(tool_def)
        if not self.defer:
            return tool_defs
        return [
            replace(tool_def, kind="external") if tool_def.kind == "function" else tool_def
            for tool_def in tool_defs
        ]

    async def prepare_output_tools(
        self, ctx: RunContext[Any], tool_defs: list[ToolDefinition]
    ) -> list[ToolDefinition]:
        self.output_tool_names = {tool_def.name for tool_def in tool_defs}
        return tool_defs


def framework_effect(tool_def: ToolDefinition | None) -> ToolEffect | None:
    """The effect the tool's metadata declares, by the core's rule (`declared_effect`): its
    `effect`, else an MCP tool's read-only/idempotent hints. An effect that is not one raises
    `InvalidToolEffectError`, naming the tool."""
    if tool_def is None:
        return None
    metadata: Mapping[str, Any] = tool_def.metadata or {}
    annotations = metadata.get("annotations")
    hints: Mapping[str, Any] = annotations if isinstance(annotations, Mapping) else {}
    return declared_effect(
        tool_def.name,
        metadata.get("effect"),
        read_only_hint=hints.get("readOnlyHint"),
        idempotent_hint=hints.get("idempotentHint"),
    )


def deferred_tool_calls(
    requests: DeferredToolRequests,
    tools: Mapping[str, ToolDefinition],
    turn: AgentTurnContext,
    order: Sequence[str],
    source_call: SourceCall | None = None,
) -> list[DeferredToolCall]:
    """One DeferredToolCall per deferred call, in the order the model made them; a tool
    source's call comes from `source_call` (its policy and reference)."""
    approvals = {call.tool_call_id for call in requests.approvals}
    position = {tool_call_id: index for index, tool_call_id in enumerate(order)}
    calls = sorted(
        [*requests.calls, *requests.approvals],
        key=lambda call: position.get(call.tool_call_id, len(position)),
    )
    deferred: list[DeferredToolCall] = []
    for call in calls:
        arguments = call.args_as_json_str()
        from_source = (
            source_call(call.tool_call_id, call.tool_name, arguments) if source_call else None
        )
        deferred.append(
            from_source
            or DeferredToolCall(
                tool_call_id=call.tool_call_id,
                tool_name=call.tool_name,
                arguments=arguments,
                policy=turn.resolve_tool_policy(
                    call.tool_name,
                    framework_effect(tools.get(call.tool_name)),
                    True if call.tool_call_id in approvals else None,
                ),
            )
        )
    return deferred
