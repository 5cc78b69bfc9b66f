"""The features suite's app (`dex_agents.testing.features`) on the Claude Agent SDK: the Claude
Code CLI against the scripted Anthropic server at $DEX_AGENTS_SCRIPTED_MODEL_URL, with the
matrix's `get_weather` as an in-process SDK MCP tool (read-only: it runs inside the CLI run).
The model and the instructions come from the session settings through `options_for`.

The `Features` and `FeaturesMcp` flow types: a flow with a compaction policy refuses the runner
(see the package README's Limits), so there is no `FeaturesCompaction`."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Mapping
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, ToolAnnotations, create_sdk_mcp_server, tool
from dex_agents import AgentSessionFlow
from dex_agents.testing import MODEL_URL_ENV
from dex_agents.testing.features import (
    DEFAULT_MODEL,
    FEATURE_INSTRUCTIONS,
    FLOW_TYPE,
    MCP_FLOW_TYPE,
    MCP_LOOKUP,
    MCP_REFUND,
    MCP_SERVER,
    feature_mcp_options,
    feature_mcp_source,
    feature_options,
)
from dex_agents.testing.matrix_app import get_weather

from dex_agents_claude_agent_sdk import ClaudeAgentRunner

SERVER_KEY = "matrix"
"""The app's tools server: the model sees `mcp__matrix__get_weather`."""


@tool("get_weather", "The weather in a city.", {"city": str}, ToolAnnotations(readOnlyHint=True))
async def weather(args: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": await get_weather(args["city"])}]}


def options() -> ClaudeAgentOptions:
    return ClaudeAgentOptions(
        model=DEFAULT_MODEL,
        system_prompt=FEATURE_INSTRUCTIONS,
        cwd=tempfile.gettempdir(),
        tools=[],
        mcp_servers={SERVER_KEY: create_sdk_mcp_server(SERVER_KEY, tools=[weather])},
        allowed_tools=[f"mcp__{SERVER_KEY}__get_weather"],
        max_turns=5,
        env={
            "ANTHROPIC_BASE_URL": os.environ[MODEL_URL_ENV],
            "ANTHROPIC_AUTH_TOKEN": "scripted",
            "ANTHROPIC_API_KEY": "",
        },
    )


def options_for(given: ClaudeAgentOptions, settings: Mapping[str, Any]) -> ClaudeAgentOptions:
    """The session settings' model and instructions, else the app's."""
    return dataclasses.replace(
        given,
        model=str(settings.get("model", DEFAULT_MODEL)),
        system_prompt=str(settings.get("instructions") or FEATURE_INSTRUCTIONS),
    )


def mcp_runner() -> ClaudeAgentRunner:
    """`FeaturesMcp`: the features app with the tool source `feature_mcp_source()` under the
    key `orders` (the model sees `mcp__orders__orders__<tool>`)."""
    given = options()
    names = [f"mcp__{MCP_SERVER}__{name}" for name in (MCP_LOOKUP, MCP_REFUND)]
    allowed = dataclasses.replace(given, allowed_tools=[*given.allowed_tools, *names])
    return ClaudeAgentRunner(options=allowed, tool_sources={MCP_SERVER: feature_mcp_source()})


def flows() -> list[AgentSessionFlow]:
    runner = ClaudeAgentRunner(options=options(), options_for=options_for)
    return [
        AgentSessionFlow(runner, flow_type=FLOW_TYPE, options=feature_options()),
        AgentSessionFlow(mcp_runner(), flow_type=MCP_FLOW_TYPE, options=feature_mcp_options()),
    ]
