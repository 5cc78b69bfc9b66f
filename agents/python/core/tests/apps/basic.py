"""The Worker app the core's integration tests run: a ScriptedRunner with logged tools."""

from __future__ import annotations

import asyncio
import os
from datetime import timedelta

from dex_agents import AgentSessionFlow, AgentSessionOptions, ToolPolicy
from dex_agents.testing import ScriptedRunner, ToolRunLog, current_tool_execution

LOG = ToolRunLog(os.environ.get("TOOL_LOG", "/tmp/dex-agents-tool-log.jsonl"))


def get_weather(city: str) -> dict[str, object]:
    """A read tool."""
    LOG.record("get_weather", city=city)
    return {"city": city, "forecast": "sunny"}


def set_thermostat(celsius: float) -> str:
    """An idempotent write."""
    LOG.record("set_thermostat", key=current_tool_execution().idempotency_key)
    return f"thermostat set to {celsius}"


def send_email(to: str, body: str) -> str:
    """A non-idempotent write that needs approval."""
    LOG.record("send_email", to=to, key=current_tool_execution().idempotency_key)
    return f"sent to {to}"


async def slow_read(seconds: float) -> str:
    """A read tool that takes a while, so a test can kill the Worker inside it."""
    LOG.record("slow_read", phase="started")
    await asyncio.sleep(seconds)
    LOG.record("slow_read", phase="finished")
    return "done"


async def slow_write(seconds: float) -> str:
    """A single-attempt write that takes a while."""
    LOG.record("slow_write", phase="started")
    await asyncio.sleep(seconds)
    LOG.record("slow_write", phase="finished")
    return "written"


def broken_tool() -> str:
    """Raises an error that is not a ToolExecutionError."""
    LOG.record("broken_tool")
    raise RuntimeError("the disk is on fire")


TOOLS = [get_weather, set_thermostat, send_email, slow_read, slow_write, broken_tool]
POLICIES = {
    "get_weather": ToolPolicy(effect="read"),
    "slow_read": ToolPolicy(effect="read"),
    "broken_tool": ToolPolicy(effect="read"),
    "set_thermostat": ToolPolicy(effect="idempotent_write"),
    "send_email": ToolPolicy(effect="non_idempotent_write"),
    "slow_write": ToolPolicy(effect="non_idempotent_write", requires_approval=False),
}
deadline_seconds = float(os.environ.get("APPROVAL_DEADLINE_SECONDS", "0"))
# A small event capacity, for the tests of the bounded event log.
event_capacity = (
    {"event_capacity_bytes": int(os.environ["EVENT_CAPACITY_BYTES"])}
    if os.environ.get("EVENT_CAPACITY_BYTES")
    else {}
)

flows = [
    AgentSessionFlow(
        ScriptedRunner(TOOLS, instructions="You are a helpful assistant."),
        flow_type="Assistant",
        options=AgentSessionOptions(
            tool_policies=POLICIES,
            interrupt_deadline=timedelta(seconds=deadline_seconds) if deadline_seconds else None,
            **event_capacity,
        ),
    )
]

# The same agent as another flow type, for a Worker that hosts only that one.
weather_flows = [
    AgentSessionFlow(
        ScriptedRunner(TOOLS, instructions="You are a weather assistant."),
        flow_type="Weather",
        options=AgentSessionOptions(tool_policies=POLICIES),
    )
]
