"""The features suite's app (`dex_agents.testing.features`) on PydanticAiRunner: the session
settings choose the model through `resolve_model` and the instructions through the deps the
`deps_factory` builds from them, read by the agent's own instructions function."""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import cache
from typing import Any

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
from dex_agents.tool_source import ToolSource
from pydantic_ai import Agent, RunContext
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from dex_agents_pydantic_ai import DepsContext, PydanticAiRunner

Settings = Mapping[str, Any]


@cache
def model_named(name: str) -> OpenAIChatModel:
    """One model (and client) per name, shared by every call that chooses it."""
    provider = OpenAIProvider(base_url=os.environ[MODEL_URL_ENV], api_key="test")
    return OpenAIChatModel(name, provider=provider)


def resolve_model(session_settings: Settings) -> OpenAIChatModel:
    return model_named(str(session_settings.get("model", DEFAULT_MODEL)))


def settings_of(context: DepsContext) -> Settings:
    return context.session_settings


agent = Agent(deps_type=Settings, tools=[get_weather])


@agent.instructions
def instructions(ctx: RunContext[Settings]) -> str:
    return str(ctx.deps.get("instructions", FEATURE_INSTRUCTIONS))


def _runner(*sources: ToolSource) -> PydanticAiRunner[Settings]:
    return PydanticAiRunner(
        agent, deps_factory=settings_of, resolve_model=resolve_model, tool_sources=sources
    )


flows = [
    AgentSessionFlow(_runner(), flow_type=FLOW_TYPE, options=feature_options()),
    AgentSessionFlow(
        _runner(), flow_type=COMPACTION_FLOW_TYPE, options=feature_compaction_options()
    ),
    AgentSessionFlow(
        _runner(feature_mcp_source()), flow_type=MCP_FLOW_TYPE, options=feature_mcp_options()
    ),
]
