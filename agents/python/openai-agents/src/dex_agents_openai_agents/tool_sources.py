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
from dex_agents.runner import AgentTurnContext, DeferredToolCall
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

    async def function_tools(self, taken: Collection[str]) -> list[FunctionTool]:
        """Lists every source (cached after its first listing); a name that the agent's own
        tools or an earlier source use is left out."""
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
        return tools

    def deferred_call(
        self, turn: AgentTurnContext, tool_call_id: str, name: str, arguments: str
    ) -> DeferredToolCall | None:
        """The offering source's DeferredToolCall, or None for a tool no source offers."""
        source = self._offered.get(name)
        if source is None:
            return None
        return source.deferred_tool_call(tool_call_id, name, arguments, turn.resolve_tool_policy)

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
