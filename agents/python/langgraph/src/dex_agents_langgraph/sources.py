"""Tool sources (such as `dex_agents.McpToolSource`) among the tools of a `create_agent` agent.

A RunModel Step lists every source (each caches its listing) and offers the listed tools as
Chat Completions tool dicts (offer.py), which the graph binds and never runs; a name that the
agent's own tools, an enabled built-in or an earlier source use is left out, as Stepwise does.
The offering source gives each call's DeferredToolCall (policy from its annotations and the
session's policies, and its reference); a tool Step hands a call whose record a source owns to
that source, which sends the session's idempotency key in the request's `_meta`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from dex_agents.tool_source import ToolSource
from dex_agents.types import AgentToolCall


class SourceTools:
    """The runner's tool sources."""

    def __init__(self, sources: Sequence[ToolSource]) -> None:
        for source in sources:
            if not isinstance(source, ToolSource):
                raise TypeError(
                    f"tool_sources takes ToolSource values such as McpToolSource, not {source!r}"
                )
        self.sources = list(sources)

    async def list_tools(self) -> None:
        for source in self.sources:
            await source.list_tools()  # cached after the first listing

    def definitions(self, taken: Collection[str]) -> tuple[Mapping[str, Any], ...]:
        """The listed tools' definitions whose names are free, the first source's first."""
        seen = set(taken)
        found: list[Mapping[str, Any]] = []
        for source in self.sources:
            for definition in source.tool_definitions():
                name = definition["function"]["name"]
                if name not in seen:
                    seen.add(name)
                    found.append(definition)
        return tuple(found)

    def offering(self, name: str, taken: Collection[str]) -> ToolSource | None:
        """The source whose tool a call of `name` is, unless the name is taken."""
        if name in taken:
            return None
        return next((source for source in self.sources if source.has_tool(name)), None)

    def owner(self, record: AgentToolCall) -> ToolSource | None:
        """The source that runs a call it deferred (its record carries the source's reference)."""
        if record.tool_source_reference is None:
            return None
        return next((source for source in self.sources if source.owns(record)), None)
