"""Tool sources (such as `dex_agents.mcp.McpToolSource`) as function tools of the root agent.

A model Step lists every source (each caches its listing) and offers each listed tool as a
gated `FunctionTool` with the tool's name, description and JSON schema: like the gated copies
of the agent's own tools, it always needs approval, so the SDK stops the run at its call and
answers with the recorded result on resume. The offering source gives each call's
DeferredToolCall (policy and reference); a tool Step hands a call whose record a source owns
to that source, without listing and without the SDK.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from agents import FunctionTool
from dex_agents.runner import (
    AgentTurnContext,
    DeferredToolCall,
)
from dex_agents.tool_source import ToolSource
from dex_agents.types import AgentToolCall

from .gating import answer_with_recorded_result


class SourceTools:
    """The runner's tool sources, and the function tools of their listed tools."""

    def __init__(self, sources: Sequence[ToolSource]) -> None:
        for source in sources:
            if not isinstance(source, ToolSource):
                raise TypeError(
                    f"tool_sources takes ToolSource values such as McpToolSource, not {source!r}"
                )
        self._sources = list(sources)
        self._offered: dict[str, ToolSource] = {}
        self._tools: dict[str, FunctionTool] = {}
        # Tools a source deferred a call of but no longer lists, by name: their references.
        self._unlisted: dict[str, str] = {}
        self._last: list[FunctionTool] = []

    async def function_tools(
        self, taken: Collection[str], records: Sequence[AgentToolCall] = ()
    ) -> list[FunctionTool]:
        """Lists every source (cached after its first listing); a name that the agent's own
        tools or an earlier source use is left out.

        A call in `records` of a tool its source did not list this time (its server could not
        be listed after a Worker restart) keeps a FunctionTool of that name from then on, so
        the SDK can resume the run with the call's recorded result. The set only grows, as
        the gated root agent is shared by every session of the runner."""
        offered: dict[str, ToolSource] = {}
        tools: list[FunctionTool] = []
        for source in self._sources:
            await source.list_tools()
            for definition in source.tool_definitions():
                function = definition["function"]
                name = function["name"]
                if name in taken or name in offered:
                    continue
                offered[name] = source
                tools.append(self._tool(function))
        self._offered = offered
        self._keep_unlisted(records, taken)
        unlisted = (name for name in self._unlisted if name not in offered)
        self._last = tools + [self._tool({"name": name}) for name in unlisted]
        return self._last

    def offered_tools(self) -> list[FunctionTool]:
        """The function tools the last listing offered."""
        return list(self._last)

    def _keep_unlisted(self, records: Sequence[AgentToolCall], taken: Collection[str]) -> None:
        for record in records:
            reference = record.tool_source_reference
            if reference is None or record.tool_name in taken or self.owner(record) is None:
                continue
            self._unlisted.setdefault(record.tool_name, reference)

    def deferred_call(
        self, turn: AgentTurnContext, tool_call_id: str, name: str, arguments: str
    ) -> DeferredToolCall | None:
        """The offering source's DeferredToolCall, or None for a tool no source offers."""
        source = self._offered.get(name)
        if source is not None:
            return source.deferred_tool_call(
                tool_call_id, name, arguments, turn.resolve_tool_policy
            )
        reference = self._unlisted.get(name)
        if reference is None:
            return None
        # Not listed, so no annotation: the session's policies and default decide.
        return DeferredToolCall(
            tool_call_id=tool_call_id,
            tool_name=name,
            arguments=arguments,
            policy=turn.resolve_tool_policy(name),
            tool_source_reference=reference,
        )

    def owner(self, record: AgentToolCall) -> ToolSource | None:
        """The source that runs a call it deferred (its record carries the source's reference)."""
        if record.tool_source_reference is None:
            return None
        return next((source for source in self._sources if source.owns(record)), None)

    def _tool(self, function: dict[str, Any]) -> FunctionTool:
        """One gated FunctionTool per listed definition, kept while the definition holds."""
        tool = self._tools.get(function["name"])
        parameters = function.get("parameters") or {"type": "object", "properties": {}}
        description = function.get("description") or ""
        if tool is None or (tool.params_json_schema, tool.description) != (
            parameters,
            description,
        ):
            tool = FunctionTool(
                name=function["name"],
                description=description,
                params_json_schema=dict(parameters),
                on_invoke_tool=answer_with_recorded_result,
                strict_json_schema=False,
                needs_approval=True,
            )
            self._tools[tool.name] = tool
        return tool
