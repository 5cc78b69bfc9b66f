"""The features suite's app (`dex_agents.testing.features`) on the OpenAI Agents SDK: the model
comes from the session settings through the runner's `resolve_model`, the instructions through
the SDK's dynamic instructions, which read the settings from the run context that
`context_factory` builds from `RunContextRequest.session_settings`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from agents import Agent, RunConfig, RunContextWrapper, function_tool, set_tracing_disabled
from agents.models.openai_provider import OpenAIProvider
from dex_agents import AgentSessionFlow
from dex_agents.testing import MODEL_URL_ENV
from dex_agents.testing.features import (
    COMPACTION_FLOW_TYPE,
    DEFAULT_MODEL,
    FEATURE_INSTRUCTIONS,
    FLOW_TYPE,
    MCP_FLOW_TYPE,
    feature_compaction_options,
    feature_mcp_options,
    feature_mcp_source,
    feature_options,
)
from dex_agents.testing.matrix_app import get_weather
from openai import AsyncOpenAI

from dex_agents_openai_agents import OpenAIAgentsRunner, RunContextRequest

set_tracing_disabled(True)


def instructions(ctx: RunContextWrapper[Mapping[str, Any]], agent: Agent[Any]) -> str:
    return str(ctx.context.get("instructions", FEATURE_INSTRUCTIONS))


def session_context(request: RunContextRequest) -> Mapping[str, Any]:
    return dict(request.session_settings)


def resolve_model(session_settings: Mapping[str, Any]) -> str:
    return str(session_settings.get("model", DEFAULT_MODEL))


agent = Agent(
    name="Features",
    instructions=instructions,
    tools=[function_tool(get_weather)],
    model=DEFAULT_MODEL,
)
client = AsyncOpenAI(base_url=os.environ[MODEL_URL_ENV], api_key="test", max_retries=0)
run_config = RunConfig(model_provider=OpenAIProvider(openai_client=client))


def _runner(**kwargs: Any) -> OpenAIAgentsRunner:
    return OpenAIAgentsRunner(
        agent,
        run_config=run_config,
        context_factory=session_context,
        resolve_model=resolve_model,
        **kwargs,
    )


flows = [
    AgentSessionFlow(_runner(), flow_type=FLOW_TYPE, options=feature_options()),
    AgentSessionFlow(
        _runner(), flow_type=COMPACTION_FLOW_TYPE, options=feature_compaction_options()
    ),
    AgentSessionFlow(
        _runner(tool_sources=[feature_mcp_source()]),
        flow_type=MCP_FLOW_TYPE,
        options=feature_mcp_options(),
    ),
]
