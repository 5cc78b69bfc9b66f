"""The matrix's agent and a run config on the scripted model server, built without reading the
environment, for the matrix app and for tests that drive a runner in process."""

from __future__ import annotations

from typing import Any

from agents import Agent, RunConfig, function_tool
from agents.models.openai_provider import OpenAIProvider
from openai import AsyncOpenAI


def matrix_agent() -> Agent[Any]:
    """The matrix app's agent (dex_agents.testing.matrix): the contract's four tools."""
    # Imported here: conftest imports this module, and the matrix's asserts are rewritten
    # only in a module pytest imports after it starts.
    from dex_agents.testing.matrix_app import MATRIX_TOOLS

    return Agent(
        name="Support",
        instructions="You help customers.",
        tools=[function_tool(f) for f in MATRIX_TOOLS],
        model="gpt-4.1",
    )


def scripted_run_config(base_url: str, **client_options: Any) -> RunConfig:
    """A run config whose OpenAI client talks to the scripted model server at `base_url`."""
    client = AsyncOpenAI(base_url=base_url, api_key="test", **client_options)
    return RunConfig(model_provider=OpenAIProvider(openai_client=client))
