"""The matrix app (dex_agents.testing.matrix): one ADK `LlmAgent` with the contract's four
tools (dex_agents.testing.matrix_app), on ADK's LiteLlm client against the scripted Chat
Completions server; the client keeps its default retries."""

from __future__ import annotations

import os

from dex_agents.testing import MODEL_URL_ENV
from dex_agents.testing.matrix_app import MATRIX_TOOLS, matrix_flows
from google.adk.agents import LlmAgent
from google.adk.models.lite_llm import LiteLlm

from dex_agents_google_adk import AdkRunner

agent = LlmAgent(
    name="support",
    model=LiteLlm(model="openai/gpt-4.1", api_base=os.environ[MODEL_URL_ENV], api_key="test"),
    instruction="You help customers.",
    tools=list(MATRIX_TOOLS),
)

flows = matrix_flows(
    lambda framework_retries: AdkRunner(agent, framework_retries=framework_retries)
)
