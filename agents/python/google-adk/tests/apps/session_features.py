"""The features app (dex_agents.testing.features) of tests/test_session_feature_matrix.py: one
ADK `LlmAgent` with the matrix's `get_weather`, on ADK's LiteLlm client against the scripted
Chat Completions server. The session settings reach it as an ADK user reads them: the
instruction is an `InstructionProvider` reading the settings from the session state, and the
model is the runner's `resolve_model`. No `FeaturesMcp` flow: see the README's Limits."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from dex_agents import AgentSessionFlow
from dex_agents.testing import MODEL_URL_ENV
from dex_agents.testing.features import (
    COMPACTION_FLOW_TYPE,
    DEFAULT_MODEL,
    FEATURE_INSTRUCTIONS,
    FLOW_TYPE,
    feature_compaction_options,
    feature_options,
)
from dex_agents.testing.matrix_app import get_weather
from google.adk.agents import LlmAgent
from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.models.lite_llm import LiteLlm

from dex_agents_google_adk import SESSION_SETTINGS_STATE_KEY, AdkRunner


def instructions(context: ReadonlyContext) -> str:
    """The session's instructions, else the app's."""
    settings: Mapping[str, Any] = context.state.get(SESSION_SETTINGS_STATE_KEY, {})
    return str(settings.get("instructions") or FEATURE_INSTRUCTIONS)


def resolve_model(settings: Mapping[str, Any]) -> str:
    """The session's model, on the agent's OpenAI-compatible client."""
    return f"openai/{settings.get('model', DEFAULT_MODEL)}"


agent = LlmAgent(
    name="assistant",
    model=LiteLlm(
        model=f"openai/{DEFAULT_MODEL}", api_base=os.environ[MODEL_URL_ENV], api_key="test"
    ),
    instruction=instructions,
    tools=[get_weather],
)
runner = AdkRunner(agent, resolve_model=resolve_model)

flows = [
    AgentSessionFlow(runner, flow_type=FLOW_TYPE, options=feature_options()),
    AgentSessionFlow(runner, flow_type=COMPACTION_FLOW_TYPE, options=feature_compaction_options()),
]
