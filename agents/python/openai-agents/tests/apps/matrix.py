"""The matrix app (dex_agents.testing.matrix): one OpenAI Agents SDK agent with the
contract's four tools, on the SDK's Responses model whose OpenAI client keeps its default
retries, in three flow types."""

from __future__ import annotations

import asyncio
import os
from datetime import timedelta

from agents import Agent, RunConfig, function_tool, set_tracing_disabled
from agents.models.openai_provider import OpenAIProvider
from dex_agents import AgentSessionFlow, AgentSessionOptions
from dex_agents.testing import MODEL_URL_ENV, ToolRunLog
from dex_agents.testing.matrix import (
    CLIENT_RETRIES_FLOW_TYPE,
    DEADLINE_FLOW_TYPE,
    FLOW_TYPE,
    MATRIX_TOOL_POLICIES,
)
from openai import AsyncOpenAI

from dex_agents_openai_agents import OpenAIAgentsRunner, current_tool_execution

set_tracing_disabled(True)
LOG = ToolRunLog(os.environ["TOOL_LOG"])


def _key() -> str:
    return current_tool_execution().idempotency_key


@function_tool
async def get_weather(city: str) -> str:
    """The weather in a city."""
    LOG.record("get_weather", city=city, phase="started")
    await asyncio.sleep(0.3)
    LOG.record("get_weather", city=city, phase="finished")
    return f"Sunny in {city}"


@function_tool
def send_email(to: str, body: str) -> str:
    """Send an email."""
    LOG.record("send_email", to=to, key=_key())
    return f"email sent to {to}"


@function_tool
def update_ticket(ticket_id: str, status: str) -> str:
    """Set a ticket's status."""
    LOG.record("update_ticket", ticket_id=ticket_id, key=_key())
    return f"ticket {ticket_id} is {status}"


@function_tool
async def charge_card(amount: int, seconds: float) -> str:
    """Charge the customer's card."""
    LOG.record("charge_card", phase="started", key=_key())
    await asyncio.sleep(seconds)
    LOG.record("charge_card", phase="finished")
    return f"charged {amount}"


agent = Agent(
    name="Support",
    instructions="You help customers.",
    tools=[get_weather, send_email, update_ticket, charge_card],
    model="gpt-4.1",
)
# The client keeps the OpenAI client's default retries: the runner must turn them off.
run_config = RunConfig(
    model_provider=OpenAIProvider(
        openai_client=AsyncOpenAI(base_url=os.environ[MODEL_URL_ENV], api_key="test")
    )
)


def _options(deadline: timedelta | None = None) -> AgentSessionOptions:
    return AgentSessionOptions(
        tool_policies=dict(MATRIX_TOOL_POLICIES), interrupt_deadline=deadline
    )


flows = [
    AgentSessionFlow(
        OpenAIAgentsRunner(agent, run_config=run_config), flow_type=FLOW_TYPE, options=_options()
    ),
    AgentSessionFlow(
        OpenAIAgentsRunner(agent, run_config=run_config),
        flow_type=DEADLINE_FLOW_TYPE,
        options=_options(timedelta(seconds=1)),
    ),
    AgentSessionFlow(
        OpenAIAgentsRunner(agent, run_config=run_config, framework_retries=True),
        flow_type=CLIENT_RETRIES_FLOW_TYPE,
        options=_options(),
    ),
]
