"""The matrix app (dex_agents.testing.matrix): one OpenAI Agents SDK agent with the
contract's four tools (dex_agents.testing.matrix_app), on the SDK's Responses model whose
OpenAI client keeps its default retries, in three flow types."""

from __future__ import annotations

import os

from agents import Agent, RunConfig, function_tool, set_tracing_disabled
from agents.models.openai_provider import OpenAIProvider
from dex_agents.testing import MODEL_URL_ENV
from dex_agents.testing.matrix_app import MATRIX_TOOLS, matrix_flows
from openai import AsyncOpenAI

from dex_agents_openai_agents import OpenAIAgentsRunner

set_tracing_disabled(True)
agent = Agent(
    name="Support",
    instructions="You help customers.",
    tools=[function_tool(f) for f in MATRIX_TOOLS],
    model="gpt-4.1",
)
# The client keeps the OpenAI client's default retries: the runner must turn them off.
run_config = RunConfig(
    model_provider=OpenAIProvider(
        openai_client=AsyncOpenAI(base_url=os.environ[MODEL_URL_ENV], api_key="test")
    )
)


flows = matrix_flows(
    lambda framework_retries: OpenAIAgentsRunner(
        agent, run_config=run_config, framework_retries=framework_retries
    ),
    warm=lambda warm_runs: OpenAIAgentsRunner(agent, run_config=run_config, warm_runs=warm_runs),
)
