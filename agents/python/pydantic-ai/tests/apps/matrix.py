"""The matrix app (dex_agents.testing.matrix): one Pydantic AI agent with the contract's four
tools (dex_agents.testing.matrix_app), on an OpenAIChatModel whose client keeps its default
retries, in three flow types."""

from __future__ import annotations

import os

from dex_agents.testing import MODEL_URL_ENV
from dex_agents.testing.matrix_app import MATRIX_TOOLS, matrix_flows
from pydantic_ai import Agent

from dex_agents_pydantic_ai import PydanticAiRunner

from .agents import scripted_model

agent = Agent(
    scripted_model(os.environ[MODEL_URL_ENV]),
    instructions="You help customers.",
    tools=MATRIX_TOOLS,
)
flows = matrix_flows(
    lambda framework_retries: PydanticAiRunner(agent, framework_retries=framework_retries),
    warm=lambda warm_runs: PydanticAiRunner(agent, warm_runs=warm_runs),
)
