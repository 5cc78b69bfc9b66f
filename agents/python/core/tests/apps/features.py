"""The features suite's app (`dex_agents.testing.features`) on StepwiseRunner: the model and
the instructions come from the session settings through `resolve_model` and an
instructions function, as the suite's contract asks of every adapter."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from dex_agents import AgentSessionFlow
from dex_agents.stepwise import AgentDefinition, InstructionContext, ModelClient, StepwiseRunner
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


def resolve_model(session_settings: Mapping[str, Any]) -> ModelClient:
    name = str(session_settings.get("model", DEFAULT_MODEL))
    # The scripted model is unknown to LiteLLM; the suite never forces a tool choice.
    return ModelClient(f"openai/{name}", api_base=os.environ.get(MODEL_URL_ENV), api_key="test")


def instructions(context: InstructionContext) -> str:
    return str(context.session_settings.get("instructions", FEATURE_INSTRUCTIONS))


def _runner(*tools: Any) -> StepwiseRunner:
    agent = AgentDefinition(
        "Features",
        instructions,
        tools=[get_weather, *tools],
        resolve_model=resolve_model,
    )
    return StepwiseRunner(agent)


flows = [
    AgentSessionFlow(_runner(), flow_type=FLOW_TYPE, options=feature_options()),
    AgentSessionFlow(
        _runner(), flow_type=COMPACTION_FLOW_TYPE, options=feature_compaction_options()
    ),
    AgentSessionFlow(
        _runner(feature_mcp_source()), flow_type=MCP_FLOW_TYPE, options=feature_mcp_options()
    ),
]
