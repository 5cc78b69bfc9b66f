"""Tool sources (the core's `McpToolSource`) served to the Claude Code CLI as in-process SDK
MCP servers, one per source key.

A run's server of a source lists the source's tools with their JSON Schemas as they are and
answers a call with a result a tool Step recorded (handed over by the runner's hook, as for the
SDK MCP tools of the options), else calls the source. The model sees a tool as
`mcp__<key>__<tool>`.

A write call (the effect the source's explicit policy declares, else the tool's annotations,
then the session's policies) is deferred by the hook and runs in its tool Step through the
source (`dex_agents.tool_source.run_source_call`), with the Step's idempotency key. A read runs
inside the CLI run: no tool Step gives it a key, so it is called with the key its tool Step
would have had, `<flow>/<turn>/<tool_use ID>` (the CLI sends the ID in the call's `_meta`), or,
without an ID, the RunModel Step's `<flow>/<turn>/<step execution ID>`; a failure the source
reports (an MCP error result, a server that cannot be reached) is the tool's error result,
which the model reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from claude_agent_sdk import McpSdkServerConfig
from dex_agents.mcp import McpToolSource
from dex_agents.mcp.source import McpTool
from dex_agents.runner import AgentTurnContext, DeferredToolExecution
from dex_agents.types import ToolEffect
from mcp.server import Server
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    TextContent,
    Tool,
)

from .texts import NOT_RUNNER_TOOL
from .tools import RecordedResults, full_name

TOOL_USE_ID_META = "claudecode/toolUseId"
"""The `_meta` key under which the CLI sends a call's tool_use ID."""
ALWAYS_LOAD_META = "anthropic/alwaysLoad"
"""The `_meta` key that has the CLI offer a tool from the first request (not on search)."""


@dataclass(frozen=True)
class Declared:
    """What a source's tool declares: the source's explicit policy for it, else its own effect
    (its MCP annotations), and the reference its tool Step calls it by. The session's
    `tool_policies` still win over both."""

    effect: ToolEffect | None
    requires_approval: bool | None
    reference: str


@dataclass(frozen=True)
class _Listed:
    key: str
    source: McpToolSource
    tool: McpTool


class SourceTools:
    """The runner's tool sources, by key: each run's `listing()`, and the owner of a call."""

    def __init__(self, sources: Mapping[str, McpToolSource]) -> None:
        for key, source in sources.items():
            if not isinstance(source, McpToolSource):
                raise TypeError(
                    f"tool_sources takes McpToolSource values, not {source!r} (key {key!r})"
                )
        self._sources = dict(sources)

    async def listing(self) -> SourceListing:
        """Every source's tools, for one run (each source lists once and keeps its tools); the
        runner, shared by the Worker's sessions, keeps none of it."""
        tools: dict[str, _Listed] = {}
        for key, source in self._sources.items():
            for tool in await source.list_tools():
                tools[full_name(key, tool.name)] = _Listed(key, source, tool)
        return SourceListing(tuple(self._sources), tools)

    def owner(self, execution: DeferredToolExecution) -> McpToolSource | None:
        """The source that runs a deferred call in its tool Step: the one whose server the
        record's reference names (no listing)."""
        record = execution.tool_call
        if record.tool_source_reference is None:
            return None
        return next((source for source in self._sources.values() if source.owns(record)), None)


@dataclass(frozen=True)
class SourceListing:
    """The sources' tools as one run sees them, by the names the model sees."""

    keys: tuple[str, ...]
    tools: Mapping[str, _Listed]

    def declared(self) -> dict[str, Declared]:
        """What each listed tool declares, by the name the model sees."""
        return {name: _declared(listed) for name, listed in self.tools.items()}

    def serving(
        self, recorded: RecordedResults, turn: AgentTurnContext
    ) -> dict[str, McpSdkServerConfig]:
        """The servers of one CLI run, one per source key."""
        return {key: self._server(key, recorded, turn) for key in self.keys}

    def _server(
        self, key: str, recorded: RecordedResults, turn: AgentTurnContext
    ) -> McpSdkServerConfig:
        listed = {entry.tool.name: (name, entry) for name, entry in self.tools.items()
                  if entry.key == key}  # fmt: skip

        async def on_list_tools(ctx: Any, params: Any) -> ListToolsResult:
            return ListToolsResult(tools=[_wire_tool(entry.tool) for _, entry in listed.values()])

        async def on_call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
            found = listed.get(params.name)
            if found is None:
                return _result(NOT_RUNNER_TOOL.format(tool_name=full_name(key, params.name)), True)
            name, entry = found
            arguments = params.arguments or {}
            handed = recorded.take(name, arguments)
            if handed is not None:
                return _result(handed.text, handed.is_error)
            key_of_call = f"{turn.flow_id}/{turn.turn_id}/{_tool_use_id(params, turn)}"
            return await _read(entry, dict(arguments), key_of_call)

        server = Server(key, version="1.0.0", on_list_tools=on_list_tools,
                        on_call_tool=on_call_tool)  # fmt: skip
        return McpSdkServerConfig(type="sdk", name=key, instance=server)


async def _read(entry: _Listed, arguments: dict[str, Any], key: str) -> CallToolResult:
    """A call the CLI runs: the source called with `key`; a failure is the tool's error."""
    try:
        called = await entry.source.call_tool(
            entry.tool.server, entry.tool.mcp_name, arguments, key
        )
    except Exception as error:  # the model reads it, as the SDK's own tools' failures
        return _result(str(error) or type(error).__name__, True)
    return _result(called.output, False)


def _declared(listed: _Listed) -> Declared:
    explicit = listed.source.policies.get(listed.tool.name)
    effect = (explicit.effect if explicit else None) or listed.tool.effect
    approval = explicit.requires_approval if explicit else None
    return Declared(effect, approval, listed.tool.reference)


def _wire_tool(tool: McpTool) -> Tool:
    schema = {"type": "object", **tool.parameters}
    return Tool.model_validate(
        {
            "name": tool.name,
            "description": tool.description,
            "inputSchema": schema,
            "_meta": {ALWAYS_LOAD_META: True},
        }
    )


def _tool_use_id(params: CallToolRequestParams, turn: AgentTurnContext) -> str:
    meta: Mapping[str, object] = cast(Mapping[str, object], params.meta or {})
    found = meta.get(TOOL_USE_ID_META)
    return found if isinstance(found, str) and found else turn.step_execution_id


def _result(text: str, is_error: bool) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=is_error)
