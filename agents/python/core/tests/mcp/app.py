"""A Worker app whose Stepwise agent takes its tools from the test MCP server over stdio
(`local`) and Streamable HTTP (`remote`, at MCP_TEST_URL when set)."""

from __future__ import annotations

import os
from pathlib import Path

from dex_agents import AgentSessionFlow
from dex_agents.mcp import HttpServer, McpServerConfig, McpToolSource, StdioServer
from dex_agents.stepwise import AgentDefinition, ModelClient, StepwiseRunner
from dex_agents.testing import MODEL_URL_ENV

from .servers import RunLog, stdio_server

LOG = RunLog(Path(os.environ.get("MCP_TEST_RUN_LOG", "/tmp/dex-agents-mcp-runs.jsonl")))

servers: list[McpServerConfig] = [stdio_server("local", LOG)]
if os.environ.get("MCP_TEST_URL"):
    servers.append(HttpServer("remote", url=os.environ["MCP_TEST_URL"]))

MODEL = ModelClient("openai/scripted-model", api_base=os.environ.get(MODEL_URL_ENV), api_key="t")
agent = AgentDefinition("Mcp", "Use the tools.", tools=[McpToolSource(servers)], model=MODEL)
flows = [AgentSessionFlow(StepwiseRunner(agent), flow_type="Mcp")]

# The reference server from npm (tests/mcp/node), when the test installed it.
if os.environ.get("MCP_EVERYTHING_JS"):
    everything = StdioServer(
        "everything", command="node", args=[os.environ["MCP_EVERYTHING_JS"], "stdio"]
    )
    reference = AgentDefinition(
        "Everything", "Use the tools.", tools=[McpToolSource([everything])], model=MODEL
    )
    flows.append(AgentSessionFlow(StepwiseRunner(reference), flow_type="Everything"))
