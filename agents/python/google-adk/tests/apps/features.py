"""The Worker app of tests/test_worker_features.py: ADK agents on LiteLlm against the scripted
Chat Completions server, one with an AgentTool whose agent has a tool of its own and a model
callback that writes session state which the tools read, and one whose tools come from an MCP
toolset (tests/apps/mcp_server.py over stdio), and one whose tool reports where LiteLLM took
its model cost map from in the Worker process, and one whose agent callbacks save artifacts
that its tool reads; and the agent trees of tests/apps/multi.py.
Tools record their runs to the ToolRunLog at $TOOL_LOG."""

from __future__ import annotations

import json
import os

from dex_agents import AgentSessionFlow, AgentSessionOptions, ToolPolicy
from dex_agents.testing import MODEL_URL_ENV
from dex_agents.testing.tool_log import ToolRunLog
from google.adk.agents import LlmAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.models import LlmRequest
from google.adk.models.lite_llm import LiteLlm
from google.adk.tools.agent_tool import AgentTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from dex_agents_google_adk import AdkRunner, current_tool_execution

from .multi import flows as agent_tree_flows
from .shop import shop_toolset


def _log() -> ToolRunLog:
    return ToolRunLog(os.environ["TOOL_LOG"])


def _model() -> LiteLlm:
    return LiteLlm(model="openai/gpt-test", api_base=os.environ[MODEL_URL_ENV], api_key="test")


def get_weather(city: str, tool_context: ToolContext) -> str:
    """The weather in a city."""
    _log().record(
        "get_weather",
        city=city,
        key=current_tool_execution().idempotency_key,
        unit=tool_context.state.get("unit"),
    )
    return f"Sunny in {city}"


def remember_unit(callback_context: CallbackContext, llm_request: LlmRequest) -> None:
    callback_context.state["unit"] = "celsius"


expert = LlmAgent(
    name="weather_expert",
    description="Answers weather questions.",
    model=_model(),
    tools=[get_weather],
)

agent = LlmAgent(
    name="concierge",
    model=_model(),
    instruction="You help travellers.",
    tools=[AgentTool(expert), get_weather],
    before_model_callback=remember_unit,
)

shop = LlmAgent(name="shop", model=_model(), tools=[shop_toolset()])


def cost_map_source() -> str:
    """Where LiteLLM's model cost map came from in this process."""
    from litellm.litellm_core_utils.get_model_cost_map import get_model_cost_map_source_info

    return json.dumps(get_model_cost_map_source_info(), sort_keys=True)


inspector = LlmAgent(name="inspector", model=_model(), tools=[cost_map_source])


async def _count_up(callback_context: CallbackContext, filename: str) -> None:
    """Saves the next number in `filename`: 0, then one more than its latest version."""
    latest = await callback_context.load_artifact(filename)
    number = int(latest.text or "0") + 1 if latest else 0
    await callback_context.save_artifact(filename, types.Part(text=str(number)))


async def count_before(callback_context: CallbackContext) -> None:
    await _count_up(callback_context, "before.txt")


async def count_after(callback_context: CallbackContext) -> None:
    await _count_up(callback_context, "after.txt")


async def read_journal(tool_context: ToolContext) -> str:
    """Read the journal."""
    counts: dict[str, list[str | None]] = {"before": [], "after": []}
    for name, versions in counts.items():
        while (part := await tool_context.load_artifact(f"{name}.txt", len(versions))) is not None:
            versions.append(part.text)
    _log().record("read_journal", **counts)
    return json.dumps(counts)


journal = LlmAgent(
    name="journal",
    model=_model(),
    tools=[read_journal],
    before_agent_callback=count_before,
    after_agent_callback=count_after,
)

flows = [
    AgentSessionFlow(
        AdkRunner(agent),
        flow_type="Concierge",
        options=AgentSessionOptions(default_tool_effect="read"),
    ),
    AgentSessionFlow(
        AdkRunner(shop),
        flow_type="Shop",
        options=AgentSessionOptions(
            tool_policies={"place_order": ToolPolicy(requires_approval=True)},
        ),
    ),
    AgentSessionFlow(
        AdkRunner(inspector),
        flow_type="Inspector",
        options=AgentSessionOptions(default_tool_effect="read"),
    ),
    AgentSessionFlow(
        AdkRunner(journal),
        flow_type="Journal",
        options=AgentSessionOptions(default_tool_effect="read"),
    ),
    *agent_tree_flows,
]
