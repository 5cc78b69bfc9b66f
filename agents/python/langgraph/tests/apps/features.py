"""The feature matrix's app (dex_agents.testing.features): one LangChain `create_agent` agent
with the matrix's `get_weather`, on ChatOpenAI against the scripted Chat Completions server.

The session settings reach it as LangGraph applications read their context: the runner runs
the graph with `context=` the settings, a `wrap_model_call` middleware picks the model named
by `settings["model"]` and a `@dynamic_prompt` middleware returns `settings["instructions"]`.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
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
from langchain.agents import create_agent
from langchain.agents.middleware import ModelRequest, ModelResponse, dynamic_prompt, wrap_model_call
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from dex_agents_langgraph import LangGraphRunner

_models: dict[str, ChatOpenAI] = {}


def chat_model(name: str) -> ChatOpenAI:
    """One ChatOpenAI per model name, kept: its client and connection pool are reused."""
    if name not in _models:
        _models[name] = ChatOpenAI(
            model=name,
            base_url=os.environ[MODEL_URL_ENV],
            api_key="test",  # type: ignore[arg-type]
            streaming=True,
            stream_usage=True,
        )
    return _models[name]


def _settings(request: ModelRequest[Any]) -> dict[str, Any]:
    context = request.runtime.context
    return context if isinstance(context, dict) else {}


@wrap_model_call
async def model_from_settings(
    request: ModelRequest[Any],
    handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse]],
) -> ModelResponse:
    name = str(_settings(request).get("model", DEFAULT_MODEL))
    return await handler(request.override(model=chat_model(name)))


@dynamic_prompt
def instructions_from_settings(request: ModelRequest[Any]) -> str:
    return str(_settings(request).get("instructions", FEATURE_INSTRUCTIONS))


agent = create_agent(
    chat_model(DEFAULT_MODEL),
    [tool(get_weather)],
    middleware=[model_from_settings, instructions_from_settings],
)

flows = [
    AgentSessionFlow(LangGraphRunner(agent), flow_type=FLOW_TYPE, options=feature_options()),
    AgentSessionFlow(
        LangGraphRunner(agent),
        flow_type=COMPACTION_FLOW_TYPE,
        options=feature_compaction_options(),
    ),
    AgentSessionFlow(
        LangGraphRunner(agent, tool_sources=[feature_mcp_source()]),
        flow_type=MCP_FLOW_TYPE,
        options=feature_mcp_options(),
    ),
]
