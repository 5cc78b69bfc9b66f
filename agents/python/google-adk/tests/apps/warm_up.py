"""The Worker app of tests/test_warm_up.py: an ADK agent on LiteLlm against the scripted Chat
Completions server, whose one tool reports, from the Worker process, where LiteLLM took its
model cost map from."""

from __future__ import annotations

import json
import os

from dex_agents import AgentSessionFlow, AgentSessionOptions, ToolPolicy
from dex_agents.testing import MODEL_URL_ENV
from google.adk.agents import LlmAgent
from google.adk.models.lite_llm import LiteLlm

from dex_agents_google_adk import AdkRunner

FLOW_TYPE = "WarmUp"


def cost_map_source() -> str:
    """Where LiteLLM's model cost map came from in this process."""
    from litellm.litellm_core_utils.get_model_cost_map import get_model_cost_map_source_info

    return json.dumps(get_model_cost_map_source_info(), sort_keys=True)


agent = LlmAgent(
    name="warm",
    model=LiteLlm(model="openai/gpt-4.1", api_base=os.environ[MODEL_URL_ENV], api_key="test"),
    instruction="You answer.",
    tools=[cost_map_source],
)
options = AgentSessionOptions(tool_policies={"cost_map_source": ToolPolicy(effect="read")})
flows = [AgentSessionFlow(AdkRunner(agent), flow_type=FLOW_TYPE, options=options)]
