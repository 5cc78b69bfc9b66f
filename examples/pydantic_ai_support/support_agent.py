"""A Pydantic AI support agent made durable by dex-agents: a read tool, and a refund that a
person approves first and that runs at most once.

Run it (see README.md): `python support_agent.py`. The Worker runs in this process; the same
`flows` also serve a separate Worker process: `dex-agents worker support_agent:flows`.
"""

from __future__ import annotations

import asyncio
import os

from dex_agents_pydantic_ai import PydanticAiRunner
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from dex_agents import (
    AgentClient,
    AgentSessionFlow,
    AgentSessionOptions,
    ToolPolicy,
    TurnResult,
    Worker,
)

ORDERS: dict[str, dict[str, str | int]] = {
    "o-1001": {"item": "kettle", "status": "delivered", "paid_cents": 4500}
}

# Any OpenAI-compatible endpoint: OPENAI_BASE_URL (default: OpenAI's API) and OPENAI_API_KEY.
model = OpenAIChatModel(
    os.environ.get("OPENAI_MODEL", "gpt-5-mini"),
    provider=OpenAIProvider(base_url=os.environ.get("OPENAI_BASE_URL")),
)

# An ordinary Pydantic AI agent: nothing in it knows about dex-agents.
agent = Agent(
    model,
    instructions=(
        "You are the support agent of an online shop. Look orders up before you answer. "
        "Refund an order only when the customer asks for it. Answer briefly."
    ),
)


@agent.tool_plain(metadata={"effect": "read"})  # a read: may run again after a crash
def get_order(order_id: str) -> dict[str, str | int]:
    """An order's item, delivery status and amount paid (in cents)."""
    if order_id not in ORDERS:
        raise ModelRetry(f"there is no order {order_id}; order IDs look like o-1001")
    return ORDERS[order_id]


@agent.tool_plain
def refund_order(order_id: str, amount_cents: int, reason: str) -> str:
    """Refund (part of) an order to the customer's card."""
    # Stands in for a payment API: a refund sent twice pays twice, hence the policy below.
    print(f"[payments] refunded {amount_cents / 100:.2f} on {order_id} ({reason})")
    return f"refunded {amount_cents} cents on {order_id}"


flows = [
    AgentSessionFlow(
        PydanticAiRunner(agent),
        flow_type="SupportAgent",
        options=AgentSessionOptions(
            # A non-idempotent write runs in a single-attempt Step (never twice, even across a
            # crash) and, by default, only after a person approves the call.
            tool_policies={"refund_order": ToolPolicy(effect="non_idempotent_write")},
        ),
    )
]


async def finish(client: AgentClient, result: TurnResult) -> TurnResult:
    """Asks for each approval the turn waits on, then waits for the rest of the turn."""
    while result.status == "waiting_for_interrupts":
        for approval in result.interrupts:
            answer = input(f"Approve {approval.tool_name} {approval.arguments}? [y/N] ")
            await client.resolve_interrupt(
                result.session_id, approval.interrupt_id, approved=answer.strip() == "y"
            )
        # The turn goes on from where it waited: wait for what it does next.
        result = await client.wait_for_turn(
            result.session_id, result.turn_id, after=result.event_offset
        )
    return result


async def main() -> None:
    # Worker and client share the database: DEX_AGENTS_DATABASE_URL, or the SQLite file
    # dex_agents.sqlite in the working directory.
    async with Worker(flows), AgentClient() as client:
        # The first turn: the agent looks the order up (a CallTool Step) and answers.
        result = await client.start_session_and_wait("SupportAgent", "Where is order o-1001?")
        print(f"[{result.status}] {result.text}")

        # The next turn asks for a refund: the turn stops at the approval, durably, and
        # run_turn returns it as waiting_for_interrupts.
        message = "The kettle arrived broken. Please refund it."
        result = await finish(client, await client.run_turn(result.session_id, message))
        print(f"[{result.status}] {result.text}")

        steps = await client.get_step_history(result.session_id)
        print("Steps:", " -> ".join(step.step_type for step in steps))


if __name__ == "__main__":
    asyncio.run(main())
