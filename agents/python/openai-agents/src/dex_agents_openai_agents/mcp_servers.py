"""The MCP servers of the application's agents (`Agent(mcp_servers=[...])`) as tool Steps.

Left to the SDK, an agent's MCP servers are listed and called inside the model Step, so a
retried RunModel calls them again. Instead the runner lists each agent's MCP tools once per
Worker process, at first use, with the SDK's own `Agent.get_mcp_tools` (its `mcp_config`, tool
filter, approval setting and guardrails hold), and the gated graph offers them like the
agent's function tools. A call runs in its tool Step: the SDK's `MCPUtil.to_function_tool`
builds the tool again from the listed MCP tool, its `_meta` carrying the call's idempotency
key, and the server runs it once per attempt.

The runner connects a server the application did not connect, in a task of its own that holds
the connection for the Worker's life (the SDK wants `connect` and `cleanup` in one task).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any, Final

from agents import Agent, FunctionTool, RunConfig, RunContextWrapper
from agents.mcp import MCPServer, MCPUtil
from agents.tool import default_tool_error_function
from dex_agents.runner import DeferredToolExecution, ToolExecutionResult
from dex_agents.tool_context import running_tool
from mcp.types import Tool as MCPTool

from . import _compat
from .gating import graph_agents
from .tool_step import run_function_tool

IDEMPOTENCY_KEY_META: Final = "io.superdurable.dex/idempotencyKey"
"""The `_meta` key of a call's idempotency key, as `dex_agents.mcp.McpToolSource` sends it
(not imported from there: `dex_agents.mcp` needs the core's `mcp` extra, which this module
does not)."""


class _Connection:
    """A task that connects one server and keeps it connected until the Worker stops."""

    def __init__(self, server: MCPServer) -> None:
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.task = asyncio.create_task(self._hold(server), name=f"mcp-server {server.name}")

    async def _hold(self, server: MCPServer) -> None:
        try:
            await server.connect()  # type: ignore[no-untyped-call]
        except asyncio.CancelledError:
            self.ready.cancel()
            raise
        except Exception as error:
            # The waiting Step fails with it; the next use starts a new connection.
            self.ready.set_exception(error)
            return
        self.ready.set_result(None)
        try:
            await asyncio.Event().wait()
        finally:
            with contextlib.suppress(Exception):
                await server.cleanup()  # type: ignore[no-untyped-call]


class AgentMcpServers:
    """The MCP servers of every agent of the graph, their listed tools and their connections."""

    def __init__(self, root: Agent[Any]) -> None:
        self._agents = [agent for agent in graph_agents(root) if agent.mcp_servers]
        self._tools: dict[str, list[FunctionTool]] | None = None
        self._listed: dict[tuple[int, str], MCPTool] = {}
        self._connections: dict[int, _Connection] = {}
        self._lock = asyncio.Lock()

    @property
    def present(self) -> bool:
        return bool(self._agents)

    async def tools(self, run_context: RunContextWrapper[Any]) -> Mapping[str, list[FunctionTool]]:
        """Each agent's MCP tools (the SDK's function tools) by agent name, listed once."""
        async with self._lock:
            if self._tools is None:
                tools: dict[str, list[FunctionTool]] = {}
                for agent in self._agents:
                    tools[agent.name] = await self._list(agent, run_context)
                self._tools = tools
            return self._tools

    async def _list(
        self, agent: Agent[Any], run_context: RunContextWrapper[Any]
    ) -> list[FunctionTool]:
        for server in agent.mcp_servers:
            await self._connect(server)
            for tool in await server.list_tools(run_context, agent):
                self._listed[(id(server), tool.name)] = tool
        listed = await agent.get_mcp_tools(run_context)
        return [tool for tool in listed if isinstance(tool, FunctionTool)]

    async def _connect(self, server: MCPServer) -> None:
        if getattr(server, "session", None) is not None:
            return  # the application connected it
        connection = self._connections.get(id(server))
        if connection is None or connection.task.done():
            connection = _Connection(server)
            self._connections[id(server)] = connection
        await asyncio.shield(connection.ready)

    async def run(
        self,
        agent: Agent[Any],
        tool: FunctionTool,
        execution: DeferredToolExecution,
        context: Any,
        run_config: RunConfig | None,
    ) -> ToolExecutionResult:
        """The call in its tool Step, through the agent's server, with the idempotency key."""
        binding = _compat.mcp_tool_binding(tool)
        assert binding is not None
        _, name, index = binding
        server = agent.mcp_servers[index or 0]
        await self._connect(server)
        listed = self._listed.get((id(server), name)) or MCPTool(name=name, input_schema={})
        meta = {**(listed.meta or {}), IDEMPOTENCY_KEY_META: execution.idempotency_key}
        real = MCPUtil.to_function_tool(
            listed.model_copy(update={"meta": meta}),
            server,
            agent.mcp_config.get("convert_schemas_to_strict", False),
            agent,
            failure_error_function=_failure_error_function(agent, server),
            tool_name_override=tool.name,
        )
        with running_tool(execution):
            return await run_function_tool(agent, real, execution, context, run_config)


def _failure_error_function(agent: Agent[Any], server: MCPServer) -> Any:
    """The application's error formatter, or None (an error fails the Step, whose effect then
    decides about a retry, as for the agent's function tools)."""
    formatter = _compat.server_failure_error_function(
        server, agent.mcp_config.get("failure_error_function")
    )
    return None if formatter is default_tool_error_function else formatter
