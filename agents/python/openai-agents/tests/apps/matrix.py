"""The matrix app (dex_agents.testing.matrix): one OpenAI Agents SDK agent with the
contract's four tools (dex_agents.testing.matrix_app), on the SDK's Responses model whose
OpenAI client keeps its default retries, in three flow types and the warm-path suite's two."""

from __future__ import annotations

import os

from agents import set_tracing_disabled
from dex_agents.testing import MODEL_URL_ENV
from dex_agents.testing.matrix_app import matrix_flows

from dex_agents_openai_agents import OpenAIAgentsRunner

from .scripted import matrix_agent, scripted_run_config

set_tracing_disabled(True)
agent = matrix_agent()
# The client keeps the OpenAI client's default retries: the runner must turn them off.
run_config = scripted_run_config(os.environ[MODEL_URL_ENV])


flows = matrix_flows(
    lambda framework_retries: OpenAIAgentsRunner(
        agent, run_config=run_config, framework_retries=framework_retries
    ),
    warm=lambda warm_runs: OpenAIAgentsRunner(agent, run_config=run_config, warm_runs=warm_runs),
)
