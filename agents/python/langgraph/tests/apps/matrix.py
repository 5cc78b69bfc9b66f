"""The matrix app (dex_agents.testing.matrix): one LangChain `create_agent` agent with the
contract's four tools, on ChatOpenAI against the scripted Chat Completions server."""

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
from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from dex_agents_langgraph import LangGraphRunner

LOG = ToolRunLog(os.environ["TOOL_LOG"])


def _key() -> str:
    return current_tool_execution().idempotency_key


@tool
async def get_weather(city: str) -> str:
    """The weather in a city."""
    LOG.record("get_weather", city=city, phase="started")
    await asyncio.sleep(0.3)
    LOG.record("get_weather", city=city, phase="finished")
    return f"Sunny in {city}"


@tool
def send_email(to: str, body: str) -> str:
    """Send an email."""
    LOG.record("send_email", to=to, key=_key())
    return f"email sent to {to}"


@tool
def update_ticket(ticket_id: str, status: str) -> str:
    """Set a ticket's status."""
    LOG.record("update_ticket", ticket_id=ticket_id, key=_key())
    return f"ticket {ticket_id} is {status}"


@tool
async def charge_card(amount: int, seconds: float) -> str:
    """Charge the customer's card."""
    LOG.record("charge_card", phase="started", key=_key())
    await asyncio.sleep(seconds)
    LOG.record("charge_card", phase="finished")
    return f"charged {amount}"


model = ChatOpenAI(
    model="gpt-4.1",
    base_url=os.environ[MODEL_URL_ENV],
    api_key="test",  # type: ignore[arg-type]
    streaming=True,
    stream_usage=True,
)
agent = create_agent(
    model,
    [get_weather, send_email, update_ticket, charge_card],
    system_prompt="You help customers.",
)


def _options(deadline: timedelta | None = None) -> AgentSessionOptions:
    return AgentSessionOptions(
        tool_policies=dict(MATRIX_TOOL_POLICIES), interrupt_deadline=deadline
    )


flows = [
    AgentSessionFlow(LangGraphRunner(agent), flow_type=FLOW_TYPE, options=_options()),
    AgentSessionFlow(
        LangGraphRunner(agent),
        flow_type=DEADLINE_FLOW_TYPE,
        options=_options(timedelta(seconds=1)),
    ),
    AgentSessionFlow(
        LangGraphRunner(agent),
        flow_type=CLIENT_RETRIES_FLOW_TYPE,
        options=_options(),
    ),
]
