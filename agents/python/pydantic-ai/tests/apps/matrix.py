"""The matrix app (dex_agents.testing.matrix): one Pydantic AI agent with the contract's four
tools (dex_agents.testing.matrix_app), on an OpenAIChatModel whose client keeps its default
retries, in three flow types and the warm-path suite's two."""

from __future__ import annotations

import os

from dex_agents.testing import MODEL_URL_ENV
from dex_agents.testing.matrix_app import matrix_flows

from dex_agents_pydantic_ai import PydanticAiRunner

from .agents import build_matrix_agent, scripted_model

agent = build_matrix_agent(scripted_model(os.environ[MODEL_URL_ENV]))
flows = matrix_flows(
    lambda framework_retries: PydanticAiRunner(agent, framework_retries=framework_retries),
    warm=lambda warm_runs: PydanticAiRunner(agent, warm_runs=warm_runs),
)
