"""The agents of bench_e2e.py, as a user would write them, and the Flows a Worker loads.

A Worker runs `dex-agents worker e2e_app:pydantic_ai_flows` (or `e2e_app:openai_agents_flows`)
with the scripted model server's URL in $DEX_AGENTS_SCRIPTED_MODEL_URL; the benchmark process
builds the same agents in-process for the frameworks alone and for the peers.
"""

from __future__ import annotations

import os

from agents import Agent as OpenAIAgent
from agents import RunConfig, function_tool, set_tracing_disabled
from agents.models.openai_provider import OpenAIProvider as AgentsOpenAIProvider
from dex_agents_openai_agents import OpenAIAgentsRunner
from dex_agents_pydantic_ai import PydanticAiRunner
from openai import AsyncOpenAI
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from dex_agents import AgentSessionFlow, AgentSessionOptions, ToolPolicy
from dex_agents.testing import MODEL_URL_ENV

set_tracing_disabled(True)

INSTRUCTIONS = "Answer briefly."
ANSWER = "The value is 42."


def lookup_value(key: str) -> str:
    return f"value of {key}: 42"


def pydantic_ai_agent(base_url: str, name: str = "bench") -> PydanticAgent[None, str]:
    model = OpenAIChatModel("gpt-test", provider=OpenAIProvider(base_url=base_url, api_key="test"))
    agent = PydanticAgent(model, name=name, instructions=INSTRUCTIONS)

    @agent.tool_plain(metadata={"effect": "read"})
    def lookup(key: str) -> str:
        """Look up a value."""
        return lookup_value(key)

    return agent


@function_tool
def lookup(key: str) -> str:
    """Look up a value."""
    return lookup_value(key)


def openai_agents_agent() -> OpenAIAgent[None]:
    return OpenAIAgent(name="Bench", instructions=INSTRUCTIONS, tools=[lookup], model="gpt-4.1")


def openai_agents_run_config(base_url: str) -> RunConfig:
    client = AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0)
    return RunConfig(model_provider=AgentsOpenAIProvider(openai_client=client))


WARM_RUNS = 8
OPTIONS = AgentSessionOptions(tool_policies={"lookup": ToolPolicy(effect="read")})


def _url() -> str:
    return os.environ[MODEL_URL_ENV]


def __getattr__(name: str) -> list[AgentSessionFlow]:
    # Built on first use, so that importing this module needs no model URL.
    if name == "pydantic_ai_flows":
        runner = PydanticAiRunner(pydantic_ai_agent(_url()), warm_runs=0)
        return [AgentSessionFlow(runner, flow_type="BenchPydanticAi", options=OPTIONS)]
    if name == "pydantic_ai_warm_flows":
        # The turn's run kept open between its model steps (the adapter's warm runs).
        runner = PydanticAiRunner(pydantic_ai_agent(_url()), warm_runs=WARM_RUNS)
        return [AgentSessionFlow(runner, flow_type="BenchPydanticAiWarm", options=OPTIONS)]
    if name == "pydantic_ai_warm_unstreamed_flows":
        # As above with the model calls not streamed (no text_delta events): like for like
        # against the frameworks alone and LangGraph + SqliteSaver invoked.
        runner = PydanticAiRunner(pydantic_ai_agent(_url()), warm_runs=WARM_RUNS, stream=False)
        flow_type = "BenchPydanticAiWarmUnstreamed"
        return [AgentSessionFlow(runner, flow_type=flow_type, options=OPTIONS)]
    if name == "openai_agents_flows":
        agent_runner = OpenAIAgentsRunner(
            openai_agents_agent(), run_config=openai_agents_run_config(_url()), warm_runs=0
        )
        return [AgentSessionFlow(agent_runner, flow_type="BenchOpenAIAgents", options=OPTIONS)]
    if name == "openai_agents_warm_flows":
        # The run state kept between a turn's model steps (the adapter's warm run states).
        agent_runner = OpenAIAgentsRunner(
            openai_agents_agent(),
            run_config=openai_agents_run_config(_url()),
            warm_runs=WARM_RUNS,
        )
        flow = AgentSessionFlow(agent_runner, flow_type="BenchOpenAIAgentsWarm", options=OPTIONS)
        return [flow]
    raise AttributeError(name)
