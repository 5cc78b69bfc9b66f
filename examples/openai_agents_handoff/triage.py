"""An OpenAI Agents SDK triage agent that hands delivery questions to a specialist, made
durable by dex-agents.

Run it (see README.md): `python triage.py`. The Worker runs in this process; the same `flows`
also serve a separate Worker process: `dex-agents worker triage:flows`.
"""

from __future__ import annotations

import asyncio
import json
import os

from agents import Agent, function_tool, set_tracing_disabled
from dex_agents_openai_agents import HANDOFF_EVENT, OpenAIAgentsRunner

from dex_agents import AgentClient, AgentSessionFlow, AgentSessionOptions, ToolPolicy, Worker

# The SDK would send its traces to OpenAI; turn them back on, or export them elsewhere, as
# you would without dex-agents.
set_tracing_disabled(True)

# The SDK's own OpenAI client: OPENAI_API_KEY, and OPENAI_BASE_URL for another endpoint that
# speaks the Responses API.
MODEL = os.environ.get("OPENAI_MODEL", "gpt-5-mini")

PARCELS = {"o-1001": {"carrier": "ParcelCo", "status": "out for delivery", "eta": "today"}}


@function_tool
def track_parcel(order_id: str) -> str:
    """Where the parcel of an order is, and when it arrives."""
    parcel = PARCELS.get(order_id)
    return json.dumps(parcel) if parcel else f"no parcel ships for order {order_id}"


# Ordinary SDK agents: the triage agent hands off to the specialist, which has the tool.
shipping = Agent(
    name="Shipping",
    instructions="You answer questions about deliveries. Track the parcel before you answer.",
    tools=[track_parcel],
    model=MODEL,
)
triage = Agent(
    name="Triage",
    instructions=(
        "You are the first contact of an online shop's support. Hand questions about "
        "deliveries to Shipping; answer anything else yourself, briefly."
    ),
    handoffs=[shipping],
    model=MODEL,
)

flows = [
    AgentSessionFlow(
        # Each turn starts with the triage agent; the agent a handoff picks keeps the turn.
        OpenAIAgentsRunner(triage),
        flow_type="Support",
        options=AgentSessionOptions(tool_policies={"track_parcel": ToolPolicy(effect="read")}),
    )
]


async def main() -> None:
    # Worker and client share the database: DEX_AGENTS_DATABASE_URL, or the SQLite file
    # dex_agents.sqlite in the working directory.
    async with Worker(flows), AgentClient() as client:
        result = await client.start_session_and_wait(
            "Support", "Where is my parcel for order o-1001?"
        )
        # The handoff runs inside the model Step (no Step of its own); the session records
        # an event for it.
        for event in await client.read_events(result.session_id):
            if event.type == HANDOFF_EVENT:
                handoff = json.loads(event.payload)
                print(f"[handoff] {handoff['from_agent']} -> {handoff['to_agent']}")
        print(f"[{result.status}] {result.text}")

        # The next turn starts with the triage agent again, which answers this one itself.
        result = await client.run_turn(result.session_id, "Thank you!")
        print(f"[{result.status}] {result.text}")

        steps = await client.get_step_history(result.session_id)
        print("Steps:", " -> ".join(step.step_type for step in steps))


if __name__ == "__main__":
    asyncio.run(main())
