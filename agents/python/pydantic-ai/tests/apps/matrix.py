"""The matrix app (dex_agents.testing.matrix): one Pydantic AI agent with the contract's four
tools, on an OpenAIChatModel whose client keeps its default retries, in three flow types."""

from __future__ import annotations

import asyncio
import os
from datetime import timedelta

from dex_agents import AgentSessionFlow, AgentSessionOptions
from dex_agents.testing import MODEL_URL_ENV, ToolRunLog, current_tool_execution
from dex_agents.testing.matrix import (
    CLIENT_RETRIES_FLOW_TYPE,
    DEADLINE_FLOW_TYPE,
    FLOW_TYPE,
    MATRIX_TOOL_POLICIES,
)
from pydantic_ai import Agent

from dex_agents_pydantic_ai import PydanticAiRunner

from .agents import scripted_model

LOG = ToolRunLog(os.environ["TOOL_LOG"])


def _key() -> str:
    return current_tool_execution().idempotency_key


agent = Agent(scripted_model(os.environ[MODEL_URL_ENV]), instructions="You help customers.")


@agent.tool_plain
async def get_weather(city: str) -> str:
    """The weather in a city."""
    LOG.record("get_weather", city=city, phase="started")
    await asyncio.sleep(0.3)
    LOG.record("get_weather", city=city, phase="finished")
    return f"Sunny in {city}"


@agent.tool_plain
def send_email(to: str, body: str) -> str:
    """Send an email."""
    LOG.record("send_email", to=to, key=_key())
    return f"email sent to {to}"


@agent.tool_plain
def update_ticket(ticket_id: str, status: str) -> str:
    """Set a ticket's status."""
    LOG.record("update_ticket", ticket_id=ticket_id, key=_key())
    return f"ticket {ticket_id} is {status}"


@agent.tool_plain
async def charge_card(amount: int, seconds: float) -> str:
    """Charge the customer's card."""
    LOG.record("charge_card", phase="started", key=_key())
    await asyncio.sleep(seconds)
    LOG.record("charge_card", phase="finished")
    return f"charged {amount}"


def _options(deadline: timedelta | None = None) -> AgentSessionOptions:
    return AgentSessionOptions(
        tool_policies=dict(MATRIX_TOOL_POLICIES), interrupt_deadline=deadline
    )


flows = [
    AgentSessionFlow(PydanticAiRunner(agent), flow_type=FLOW_TYPE, options=_options()),
    AgentSessionFlow(
        PydanticAiRunner(agent),
        flow_type=DEADLINE_FLOW_TYPE,
        options=_options(timedelta(seconds=1)),
    ),
    AgentSessionFlow(
        PydanticAiRunner(agent, framework_retries=True),
        flow_type=CLIENT_RETRIES_FLOW_TYPE,
        options=_options(),
    ),
]
