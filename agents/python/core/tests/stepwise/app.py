"""A Worker app whose agent is a Stepwise AgentDefinition, for the integration tests."""

from __future__ import annotations

import os
from datetime import timedelta

from dex_agents import AgentSessionFlow, AgentSessionOptions, CompactionPolicy
from dex_agents.runner import BuiltInToolName
from dex_agents.stepwise import AgentDefinition, ModelClient, StepwiseRunner, tool
from dex_agents.testing import MODEL_URL_ENV, ToolRunLog

LOG = ToolRunLog(os.environ.get("TOOL_LOG", "/tmp/dex-agents-tool-log.jsonl"))


@tool(effect="read")
def get_weather(city: str) -> dict[str, str]:
    """The weather in a city.

    Args:
        city: The city's name.
    """
    LOG.record("get_weather", city=city)
    return {"city": city, "forecast": "sunny"}


@tool(effect="non_idempotent_write")
def send_email(to: str, body: str) -> str:
    """Send an email."""
    LOG.record("send_email", to=to)
    return f"sent to {to}"


# The scripted model is unknown to LiteLLM, so forcing a tool is allowed explicitly.
MODEL = ModelClient(
    "openai/scripted-model",
    api_base=os.environ.get(MODEL_URL_ENV),
    api_key="test",
    forced_tool_choice=True,
)
BUILT_INS: tuple[BuiltInToolName, ...] = ("ask_user", "durable_wait", "write_todos")

assistant = AgentDefinition(
    "Assistant", "You are a helpful assistant.", tools=[get_weather, send_email], model=MODEL
)
planner = AgentDefinition(
    "Planner",
    "Plan, then do.",
    tools=[get_weather],
    model=MODEL,
    planning_tool_choice="required",
)
flows = [
    AgentSessionFlow(StepwiseRunner(assistant), flow_type="Assistant"),
    AgentSessionFlow(
        StepwiseRunner(planner),
        flow_type="Planner",
        options=AgentSessionOptions(
            built_in_tools=BUILT_INS,
            plan_mode_enabled=True,
            max_durable_wait=timedelta(hours=1),
        ),
    ),
    AgentSessionFlow(
        StepwiseRunner(AgentDefinition("Compacting", "Be brief.", model=MODEL)),
        flow_type="Compacting",
        options=AgentSessionOptions(compaction=CompactionPolicy(context_window_tokens=300)),
    ),
]
