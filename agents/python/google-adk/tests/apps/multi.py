"""The Worker app of tests/test_worker_multi_agent.py: ADK agent trees on LiteLlm against the
scripted Chat Completions server. Triage transfers to billing (its sub-agent), by the model's
`transfer_to_agent` or by its tool `hand_over`, which sets the transfer on its tool context;
triage's `note_order` writes session state in its tool Step that billing's instruction reads,
and saves an artifact that billing's `refund` loads; a loop
of a writer whose `add_line` appends to state and whose `exit_loop` (ADK's own) escalates out
of the loop. Tools record their runs to the ToolRunLog at $TOOL_LOG."""

from __future__ import annotations

import os

from dex_agents import AgentSessionFlow, AgentSessionOptions, ToolPolicy
from dex_agents.testing import MODEL_URL_ENV
from dex_agents.testing.tool_log import ToolRunLog
from google.adk.agents import LlmAgent, LoopAgent
from google.adk.models.lite_llm import LiteLlm
from google.adk.tools import exit_loop
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from dex_agents_google_adk import AdkRunner, current_tool_execution


def _log() -> ToolRunLog:
    return ToolRunLog(os.environ["TOOL_LOG"])


def _model() -> LiteLlm:
    return LiteLlm(model="openai/gpt-test", api_base=os.environ[MODEL_URL_ENV], api_key="test")


async def note_order(order_id: str, tool_context: ToolContext) -> str:
    """Note the order the customer talks about."""
    notes = int(tool_context.state.get("notes", 0)) + 1
    _log().record("note_order", order_id=order_id, key=current_tool_execution().idempotency_key)
    tool_context.state["order"] = order_id
    tool_context.state["notes"] = notes
    await tool_context.save_artifact("note.txt", types.Part(text=f"customer asks about {order_id}"))
    return f"noted {order_id}"


def hand_over(order_id: str, tool_context: ToolContext) -> str:
    """Hand the order over to billing."""
    _log().record("hand_over", order_id=order_id, key=current_tool_execution().idempotency_key)
    tool_context.state["order"] = order_id
    tool_context.actions.transfer_to_agent = "billing"
    return f"handed {order_id} over"


async def refund(order_id: str, tool_context: ToolContext) -> str:
    """Refund an order."""
    note = await tool_context.load_artifact("note.txt")
    _log().record(
        "refund",
        order_id=order_id,
        agent=tool_context.agent_name,
        noted=tool_context.state.get("order"),
        note=note.text if note else None,
        key=current_tool_execution().idempotency_key,
    )
    return f"refunded {order_id}"


billing = LlmAgent(
    name="billing",
    description="Refunds orders.",
    model=_model(),
    instruction="You refund order {order?} (noted {notes?} times).",
    tools=[refund],
)

triage = LlmAgent(
    name="triage",
    model=_model(),
    instruction="Route the customer.",
    tools=[note_order, hand_over],
    sub_agents=[billing],
)


def add_line(line: str, tool_context: ToolContext) -> str:
    """Add a line to the draft."""
    lines = [*tool_context.state.get("lines", []), line]
    _log().record("add_line", line=line, lines=lines)
    tool_context.state["lines"] = lines
    return f"{len(lines)} lines"


writer = LlmAgent(
    name="writer",
    model=_model(),
    instruction="Draft so far: {lines?}",
    tools=[add_line, exit_loop],
)

drafts = LoopAgent(name="drafts", sub_agents=[writer], max_iterations=4)

flows = [
    AgentSessionFlow(
        AdkRunner(triage),
        flow_type="Triage",
        options=AgentSessionOptions(
            default_tool_effect="read",
            tool_policies={"refund": ToolPolicy(effect="idempotent_write")},
        ),
    ),
    AgentSessionFlow(
        AdkRunner(drafts),
        flow_type="Drafts",
        options=AgentSessionOptions(default_tool_effect="read"),
    ),
]
