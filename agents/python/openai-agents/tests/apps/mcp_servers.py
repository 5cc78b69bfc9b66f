"""The Worker app of test_mcp_servers.py: an OpenAI Agents SDK agent with an MCP server of its
own (`Agent(mcp_servers=[MCPServerStdio(...)])`), the core's features MCP server
(`dex_agents.testing.mcp_server`: `lookup_order`, a read, and `refund_order`, a destructive
write), which appends each real run and the idempotency key it got in `_meta` to $TOOL_LOG.
"""

from __future__ import annotations

import os
import sys

from agents import Agent, RunConfig, set_tracing_disabled
from agents.mcp import MCPServerStdio
from agents.models.openai_provider import OpenAIProvider
from dex_agents import AgentSessionFlow
from dex_agents.testing import MODEL_URL_ENV
from openai import AsyncOpenAI

from dex_agents_openai_agents import OpenAIAgentsRunner

set_tracing_disabled(True)

orders = MCPServerStdio(
    params={
        "command": sys.executable,
        "args": ["-m", "dex_agents.testing.mcp_server"],
        "env": {"TOOL_LOG": os.environ["TOOL_LOG"]},
    },
    name="orders",
    cache_tools_list=True,
    client_session_timeout_seconds=30,
)
agent = Agent(
    name="Orders",
    instructions="Answer with the order tools.",
    model="gpt-4.1",
    mcp_servers=[orders],
)
client = AsyncOpenAI(base_url=os.environ[MODEL_URL_ENV], api_key="test", max_retries=0)
config = RunConfig(model_provider=OpenAIProvider(openai_client=client))
flows = [AgentSessionFlow(OpenAIAgentsRunner(agent, run_config=config), flow_type="SdkMcpAgent")]
