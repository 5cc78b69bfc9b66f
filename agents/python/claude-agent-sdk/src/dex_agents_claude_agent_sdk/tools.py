"""The runner's in-process SDK MCP tools (`create_sdk_mcp_server` in `options.mcp_servers`):
their effects, their calls in a tool Step, and the copies of their servers the CLI gets.

A write call (effect not `read`) must not run inside the CLI: the runner's PreToolUse hook
defers it, dex-agents runs it in a tool Step (`call`), and the resumed CLI run gets the recorded
result from the server copy (`serving`) instead of running the tool again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from claude_agent_sdk import McpSdkServerConfig
from claude_agent_sdk.types import McpServerConfig
from dex_agents.mcp.policies import annotation_effect
from dex_agents.types import ToolEffect
from mcp.server import Server
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
)

_R = TypeVar("_R", CallToolResult, ListToolsResult)


@dataclass(frozen=True)
class RecordedResult:
    """What a tool Step recorded for a call, as the model sees it."""

    text: str
    is_error: bool


class RecordedResults:
    """Recorded results the hook let through, waiting for the CLI's MCP call of the same tool
    and arguments (the MCP call does not carry the tool_use ID)."""

    def __init__(self) -> None:
        self._waiting: dict[tuple[str, str], list[RecordedResult]] = {}

    def hand_over(
        self, tool_name: str, arguments: Mapping[str, Any], result: RecordedResult
    ) -> None:
        self._waiting.setdefault((tool_name, _canonical(arguments)), []).append(result)

    def take(self, tool_name: str, arguments: Mapping[str, Any]) -> RecordedResult | None:
        waiting = self._waiting.get((tool_name, _canonical(arguments)))
        return waiting.pop(0) if waiting else None


@dataclass(frozen=True)
class _Tool:
    server: str
    name: str
    effect: ToolEffect | None


class SdkTools:
    """The SDK MCP servers of the options, by the names the model sees (`mcp__<key>__<tool>`)."""

    def __init__(self, servers: Mapping[str, McpServerConfig] | Any) -> None:
        self._servers: dict[str, Server] = {}
        if isinstance(servers, Mapping):
            for key, config in servers.items():
                if isinstance(config, dict) and config.get("type") == "sdk":
                    self._servers[str(key)] = cast(McpSdkServerConfig, config)["instance"]
        self._tools: dict[str, _Tool] | None = None

    async def effects(self) -> dict[str, ToolEffect | None]:
        """Each tool's effect from its MCP annotations (None: left to policies and default)."""
        return {name: tool.effect for name, tool in (await self._catalog()).items()}

    async def call(self, tool_name: str, arguments: dict[str, Any]) -> CallToolResult:
        """Runs the tool's own handler, as the CLI's call would."""
        tool = (await self._catalog()).get(tool_name)
        if tool is None:
            raise LookupError(f"{tool_name} is not a tool of the runner's SDK MCP servers")
        params = CallToolRequestParams(name=tool.name, arguments=arguments)
        return await _handle(self._servers[tool.server], "tools/call", None, params, CallToolResult)

    def serving(self, recorded: RecordedResults) -> dict[str, McpServerConfig]:
        """Copies of the servers that answer a call with a recorded result when one waits,
        and run the tool otherwise."""
        return {key: self._serving(key, server, recorded) for key, server in self._servers.items()}

    async def _catalog(self) -> dict[str, _Tool]:
        if self._tools is None:
            tools: dict[str, _Tool] = {}
            for key, server in self._servers.items():
                params = PaginatedRequestParams()
                listed = await _handle(server, "tools/list", None, params, ListToolsResult)
                for tool in listed.tools:
                    effect = annotation_effect(tool.annotations)
                    tools[full_name(key, tool.name)] = _Tool(key, tool.name, effect)
            self._tools = tools
        return self._tools

    @staticmethod
    def _serving(key: str, server: Server, recorded: RecordedResults) -> McpSdkServerConfig:
        async def on_list_tools(ctx: Any, params: Any) -> ListToolsResult:
            return await _handle(server, "tools/list", ctx, params, ListToolsResult)

        async def on_call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
            found = recorded.take(full_name(key, params.name), params.arguments or {})
            if found is None:
                return await _handle(server, "tools/call", ctx, params, CallToolResult)
            content = [TextContent(type="text", text=found.text)]
            return CallToolResult(content=list(content), is_error=found.is_error)

        copy = Server(server.name, version=server.version, on_list_tools=on_list_tools,
                      on_call_tool=on_call_tool)  # fmt: skip
        return McpSdkServerConfig(type="sdk", name=server.name, instance=copy)


def full_name(server: str, tool: str) -> str:
    """The tool's name as the model and the PreToolUse hook see it."""
    return f"mcp__{server}__{tool}"


def result_text(result: CallToolResult) -> str:
    """The text parts of a tool result (other parts as JSON)."""
    parts = [
        block.text if isinstance(block, TextContent) else block.model_dump_json()
        for block in result.content
    ]
    return "".join(parts)


async def _handle(server: Server, method: str, ctx: Any, params: Any, kind: type[_R]) -> _R:
    """Calls the server's own handler of `method` (the SDK's tool servers ignore `ctx`)."""
    entry = server.get_request_handler(method)
    if entry is None:
        raise LookupError(f"MCP server {server.name} has no {method} handler")
    result = await entry.handler(ctx, params)
    return result if isinstance(result, kind) else kind.model_validate(result)


def _canonical(arguments: Mapping[str, Any]) -> str:
    return json.dumps(arguments, sort_keys=True)
