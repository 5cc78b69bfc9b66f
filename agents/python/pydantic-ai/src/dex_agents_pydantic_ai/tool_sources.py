"""Tool sources (such as `dex_agents.mcp.McpToolSource`) as tools of the agent's runs.

A model step lists every source (each caches its listing), offers the listed tools to the run
as an `ExternalToolset`, so Pydantic AI validates and defers their calls like every other
tool's, and asks the offering source for each call's DeferredToolCall (policy and reference).
A tool Step hands a call whose record a source owns to that source, without listing and
without running the agent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dex_agents.runner import (
    AgentTurnContext,
    DeferredToolCall,
)
from dex_agents.tool_source import ToolSource
from dex_agents.types import AgentToolCall
from pydantic_ai import ToolDefinition
from pydantic_ai.toolsets import ExternalToolset

TOOLSET_ID = "dex-agents-tool-sources"


@dataclass(frozen=True)
class SourceOffer:
    """The tools the sources offer to one model step, and which source offers each name."""

    toolsets: tuple[ExternalToolset[Any], ...] = ()
    sources: Mapping[str, ToolSource] = field(default_factory=dict)

    def deferred_call(
        self, turn: AgentTurnContext, tool_call_id: str, name: str, arguments: str
    ) -> DeferredToolCall | None:
        """The offering source's DeferredToolCall, or None for a tool no source offered."""
        source = self.sources.get(name)
        if source is None:
            return None
        return source.deferred_tool_call(tool_call_id, name, arguments, turn.resolve_tool_policy)


class SourceTools:
    """The runner's tool sources."""

    def __init__(self, sources: Sequence[ToolSource]) -> None:
        for source in sources:
            if not isinstance(source, ToolSource):
                raise TypeError(
                    f"tool_sources takes ToolSource values such as McpToolSource, not {source!r}"
                )
        self._sources = list(sources)

    async def offer(self) -> SourceOffer:
        """Lists every source (cached after its first listing) and offers its tools; a name
        an earlier source offers is left out."""
        if not self._sources:
            return SourceOffer()
        sources: dict[str, ToolSource] = {}
        definitions: list[ToolDefinition] = []
        for source in self._sources:
            await source.list_tools()
            for definition in source.tool_definitions():
                function = definition["function"]
                if function["name"] not in sources:
                    sources[function["name"]] = source
                    definitions.append(tool_definition(function))
        return SourceOffer((ExternalToolset(definitions, id=TOOLSET_ID),), sources)

    def owner(self, record: AgentToolCall) -> ToolSource | None:
        """The source that runs a call it deferred (its record carries the source's reference)."""
        if record.tool_source_reference is None:
            return None
        return next((source for source in self._sources if source.owns(record)), None)


def tool_definition(function: dict[str, Any]) -> ToolDefinition:
    return ToolDefinition(
        name=function["name"],
        description=function.get("description"),
        parameters_json_schema=function.get("parameters") or {"type": "object", "properties": {}},
        kind="external",
    )
