"""The Pydantic AI agents the tests run: ordinary agents, written as a user would write them."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dex_agents.testing import ToolRunLog
from pydantic import BaseModel
from pydantic_ai import (
    Agent,
    ApprovalRequiredToolset,
    BinaryContent,
    FunctionToolset,
    ImageUrl,
    ModelRetry,
    RunContext,
    ToolFailed,
    ToolReturn,
)
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from dex_agents_pydantic_ai import DepsContext, current_tool_execution


@dataclass
class AppDeps:
    run_log: ToolRunLog
    user_name: str
    flow_id: str


def deps_factory(run_log_path: str | Path) -> Any:
    def build(context: DepsContext) -> AppDeps:
        return AppDeps(ToolRunLog(run_log_path), user_name="Ada", flow_id=context.flow_id)

    return build


def scripted_model(base_url: str) -> OpenAIChatModel:
    return OpenAIChatModel("gpt-test", provider=OpenAIProvider(base_url=base_url, api_key="test"))


def build_matrix_agent(model: OpenAIChatModel) -> Agent[None, str]:
    """The matrix app's agent (dex_agents.testing.matrix): the contract's four tools."""
    # Imported here: conftest imports this module before it registers the matrix's asserts.
    from dex_agents.testing.matrix_app import MATRIX_TOOLS

    return Agent(model, instructions="You help customers.", tools=MATRIX_TOOLS)


def _key() -> str:
    return current_tool_execution().idempotency_key


def build_triage_agent(model: OpenAIChatModel) -> Agent[AppDeps, str]:
    refunds = FunctionToolset[AppDeps]()

    @refunds.tool
    def refund(ctx: RunContext[AppDeps], order_id: str, amount: int) -> str:
        """Refund an order; large refunds need approval."""
        ctx.deps.run_log.record("refund", order_id=order_id, amount=amount)
        return f"refunded {amount} on {order_id}"

    agent = Agent(
        model,
        deps_type=AppDeps,
        system_prompt="You triage support requests.",
        instructions="Answer briefly.",
        toolsets=[
            ApprovalRequiredToolset(refunds, lambda ctx, tool_def, args: args["amount"] > 100)
        ],
    )

    @agent.system_prompt(dynamic=True)
    def who(ctx: RunContext[AppDeps]) -> str:
        return f"The user is {ctx.deps.user_name}."

    @agent.tool(metadata={"effect": "read"})
    async def get_weather(ctx: RunContext[AppDeps], city: str) -> str:
        """Current weather of a city."""
        log = ctx.deps.run_log
        log.record(
            "get_weather", city=city, tool_call_id=ctx.tool_call_id, flow_id=ctx.deps.flow_id
        )
        await asyncio.sleep(float(os.environ.get("WEATHER_SECONDS", "0")))
        log.record("get_weather:finished", city=city)
        return f"Sunny in {city}"

    @agent.tool(metadata={"effect": "read"})
    def lookup_order(ctx: RunContext[AppDeps], order_id: str) -> dict[str, Any]:
        """A sync tool with a structured result."""
        ctx.deps.run_log.record("lookup_order", order_id=order_id, key=_key())
        if not order_id.startswith("o-"):
            raise ModelRetry("order ids start with 'o-'")
        return {"order_id": order_id, "status": "shipped"}

    @agent.tool(requires_approval=True, metadata={"effect": "non_idempotent_write"})
    def send_email(ctx: RunContext[AppDeps], to: str, body: str) -> str:
        """Send an email."""
        ctx.deps.run_log.record("send_email", to=to, approved=ctx.tool_call_approved, key=_key())
        return f"email sent to {to}"

    @agent.tool(metadata={"effect": "idempotent_write"})
    def update_ticket(ctx: RunContext[AppDeps], ticket_id: str, status: str) -> str:
        """Set a ticket's status."""
        ctx.deps.run_log.record("update_ticket", ticket_id=ticket_id, key=_key())
        return f"ticket {ticket_id} is {status}"

    @agent.tool
    async def charge_card(ctx: RunContext[AppDeps], amount: int) -> str:
        """Charge the customer's card; a slow, single-attempt write."""
        ctx.deps.run_log.record("charge_card:start", amount=amount, key=_key())
        await asyncio.sleep(float(os.environ.get("CHARGE_CARD_SECONDS", "0")))
        ctx.deps.run_log.record("charge_card:done", amount=amount)
        return f"charged {amount}"

    @agent.tool_plain(metadata={"effect": "read"})
    def check_stock(item: str) -> str:
        """Fails as the model should see it (ToolFailed), or with an unexpected error."""
        if item == "fire":
            raise RuntimeError("the disk is on fire")
        raise ToolFailed(f"{item} is out of stock")

    return agent


class Ticket(BaseModel):
    category: str
    priority: int


def build_ticket_agent(model: OpenAIChatModel) -> Agent[AppDeps, Ticket]:
    agent = Agent(model, deps_type=AppDeps, output_type=Ticket, instructions="File a ticket.")

    @agent.tool_plain(metadata={"effect": "read"})
    def known_categories() -> list[str]:
        return ["billing", "shipping"]

    return agent


PIXEL_PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
    b"\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xff\xff?\x00\x05\xfe\x02\xfe\xa75\x81\x84"
    b"\x00\x00\x00\x00IEND\xaeB`\x82"
)
"""A 1x1 PNG: the image the files agent's tools return."""


def build_files_agent(model: OpenAIChatModel) -> Agent[AppDeps, str]:
    """Tools that return files, as Pydantic AI's docs teach: a ToolReturn with content and
    metadata, an image returned directly, and an image too large to store."""
    agent = Agent(model, deps_type=AppDeps, instructions="Describe what the tools show.")

    @agent.tool(metadata={"effect": "read"})
    def chart(ctx: RunContext[AppDeps], region: str) -> ToolReturn:
        """The sales chart of a region."""
        ctx.deps.run_log.record("chart", region=region)
        return ToolReturn(
            return_value=f"chart of {region} ready",
            content=[
                f"The {region} chart:",
                BinaryContent(PIXEL_PNG, media_type="image/png"),
                ImageUrl("https://example.com/legend.png"),
            ],
            metadata={"rows": 3, "region": region},
        )

    @agent.tool(metadata={"effect": "read"})
    def snapshot(ctx: RunContext[AppDeps], size: int = 0) -> BinaryContent:
        """A camera snapshot; `size` pads it (to exceed the stored-result limit)."""
        ctx.deps.run_log.record("snapshot", size=size)
        return BinaryContent(PIXEL_PNG + b"\0" * size, media_type="image/png")

    @agent.tool_plain(metadata={"effect": "read"})
    def open_catalog() -> ToolReturn:
        """Opens the catalog: reveals price_of."""
        return ToolReturn(return_value="catalog open", tools=["price_of"])

    @agent.tool_plain(defer_loading=True, metadata={"effect": "read"})
    def price_of(item: str) -> str:
        """The price of a catalog item."""
        return f"{item}: 3 EUR"

    return agent


def build_sequential_agent(model: OpenAIChatModel) -> Agent[AppDeps, str]:
    """A `sequential=True` tool between plain ones; each logs when it starts and finishes."""
    agent = Agent(model, deps_type=AppDeps, instructions="Do the steps.")

    async def step(ctx: RunContext[AppDeps], name: str, label: str) -> str:
        ctx.deps.run_log.record(name, label=label, phase="started")
        await asyncio.sleep(0.3)
        ctx.deps.run_log.record(name, label=label, phase="finished")
        return f"{label} done"

    @agent.tool(metadata={"effect": "read"})
    async def fetch(ctx: RunContext[AppDeps], label: str) -> str:
        """Fetches something."""
        return await step(ctx, "fetch", label)

    @agent.tool(metadata={"effect": "idempotent_write"}, sequential=True)
    async def migrate(ctx: RunContext[AppDeps], label: str) -> str:
        """Migrates the database: nothing else may run meanwhile."""
        return await step(ctx, "migrate", label)

    return agent
