"""An MCP toolset in the agent's tools, in the runner harness: ADK's real `McpToolset` on the
real `mcp` SDK's server (tests/apps/mcp_server.py over stdio), the scripted model server on
LiteLlm. Each MCP tool run appends to the ToolRunLog at $TOOL_LOG, counted outside the runner."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from dex_agents import ToolPolicy
from dex_agents.runner import ToolCallsRequested
from dex_agents.testing import Reject, RunnerDriver, ScriptedModelServer, reply_text, reply_tools
from dex_agents.testing.tool_log import ToolRunLog
from google.adk.agents import LlmAgent
from google.adk.tools.mcp_tool.mcp_toolset import McpToolset

from dex_agents_google_adk import AdkRunner, texts

from .apps.shop import shop_toolset
from .test_features import lite_llm, tool_results_of


@pytest.fixture
def mcp_log(tool_log: ToolRunLog, monkeypatch: pytest.MonkeyPatch) -> ToolRunLog:
    """The log the MCP server (started with this process's environment) appends to."""
    monkeypatch.setenv("TOOL_LOG", str(tool_log.path))
    return tool_log


@pytest.fixture
async def toolsets(mcp_log: ToolRunLog) -> AsyncIterator[list[McpToolset]]:
    """Make toolsets with `toolsets.append(shop_toolset(...))`; each is closed (its server
    process ended) after the test."""
    made: list[McpToolset] = []
    yield made
    for toolset in made:
        await toolset.close()


def shop_agent(model: ScriptedModelServer, toolsets: list[McpToolset], **options: Any) -> LlmAgent:
    toolsets.append(shop_toolset(**options))
    return LlmAgent(name="shop", model=lite_llm(model), tools=[toolsets[-1]])


def offered_tools(model: ScriptedModelServer, index: int) -> list[str]:
    return [t["function"]["name"] for t in model.requests[index].body.get("tools", [])]


def mcp_text(function_response: str) -> str:
    """The text of the MCP tool result the model read: ADK's McpTool returns the MCP
    `CallToolResult` as a dict, recorded as its JSON, which the model reads as ADK's
    `{"result": <that JSON>}`."""
    result = json.loads(json.loads(function_response)["result"])
    assert result["isError"] is False
    [content] = result["content"]
    return str(content["text"])


async def test_a_read_only_mcp_tool_is_a_read_and_its_result_reaches_the_model(
    model: ScriptedModelServer, toolsets: list[McpToolset], mcp_log: ToolRunLog
) -> None:
    driver = RunnerDriver(AdkRunner(shop_agent(model, toolsets)))
    model.enqueue(reply_tools(("c1", "get_stock", {"item": "kettle"})), reply_text("3 left."))
    result = await driver.turn("Any kettles?")

    [record] = result.records
    assert (record.tool_name, record.effect, record.status) == ("get_stock", "read", "succeeded")
    assert not record.requires_approval
    assert [e["item"] for e in mcp_log.entries("get_stock")] == ["kettle"]
    assert mcp_text(tool_results_of(model, 1)["c1"]) == "3 kettle in stock"
    assert sorted(offered_tools(model, 0)) == ["get_stock", "place_order"]
    assert result.new_messages[-1].text == "3 left."


async def test_a_write_without_hints_takes_the_default_and_carries_the_key_in_meta(
    model: ScriptedModelServer, toolsets: list[McpToolset], mcp_log: ToolRunLog
) -> None:
    driver = RunnerDriver(
        AdkRunner(shop_agent(model, toolsets)),
        tool_policies={"get_stock": ToolPolicy(effect="idempotent_write")},
        default_tool_effect="non_idempotent_write",
    )
    model.enqueue(
        reply_tools(
            ("o1", "place_order", {"item": "kettle", "quantity": 2}),
            ("s1", "get_stock", {"item": "kettle"}),
        ),
        reply_text("Ordered."),
    )
    result = await driver.turn("Order two kettles.")

    effects = {r.tool_name: (r.effect, r.status) for r in result.records}
    assert effects == {
        "place_order": ("non_idempotent_write", "succeeded"),  # CallSingleAttemptTool
        "get_stock": ("idempotent_write", "succeeded"),  # the ToolPolicy over readOnlyHint
    }
    assert mcp_log.count("place_order") == 1 and mcp_log.count("get_stock") == 1
    assert mcp_text(tool_results_of(model, 1)["o1"]) == "ordered 2 kettle"
    # The tool Step's idempotency key reached the server in the request's _meta.
    [order] = mcp_log.entries("place_order")
    assert order["key"] == driver.execution(result.records[0]).idempotency_key
    assert order["key"].endswith("/o1")


async def test_a_rejected_mcp_write_never_runs_and_the_model_reads_the_rejection(
    model: ScriptedModelServer, toolsets: list[McpToolset], mcp_log: ToolRunLog
) -> None:
    driver = RunnerDriver(
        AdkRunner(shop_agent(model, toolsets)),
        tool_policies={"place_order": ToolPolicy(requires_approval=True)},
        default_tool_effect="read",
    )
    model.enqueue(
        reply_tools(("o1", "place_order", {"item": "toaster", "quantity": 1})),
        reply_text("I did not order it."),
    )
    result = await driver.turn("Order a toaster.", decide=lambda r: Reject("Not this month."))

    [record] = result.records
    assert (record.requires_approval, record.status) == (True, "rejected")
    assert mcp_log.count() == 0
    assert "Not this month." in tool_results_of(model, 1)["o1"]
    assert result.new_messages[-1].text == "I did not order it."


async def test_the_toolsets_filter_and_prefix_name_the_tools_the_model_calls(
    model: ScriptedModelServer, toolsets: list[McpToolset], mcp_log: ToolRunLog
) -> None:
    agent = shop_agent(model, toolsets, tool_filter=["get_stock"], tool_name_prefix="shop")
    driver = RunnerDriver(AdkRunner(agent))
    model.enqueue(reply_tools(("c1", "shop_get_stock", {"item": "toaster"})), reply_text("None."))
    result = await driver.turn("Toasters?")

    assert offered_tools(model, 0) == ["shop_get_stock"]
    [record] = result.records
    assert (record.tool_name, record.effect) == ("shop_get_stock", "read")
    assert [e["item"] for e in mcp_log.entries("get_stock")] == ["toaster"]


async def test_a_call_of_a_tool_the_toolset_no_longer_lists_fails_as_a_tool_failure(
    model: ScriptedModelServer, toolsets: list[McpToolset], mcp_log: ToolRunLog
) -> None:
    runner = AdkRunner(shop_agent(model, toolsets))
    driver = RunnerDriver(runner, default_tool_effect="read")
    model.enqueue(
        reply_tools(("o1", "place_order", {"item": "kettle", "quantity": 1})),
        reply_text("The shop has no ordering now."),
    )
    turn_id = driver.start_turn("Order a kettle.")
    requested = await driver.model_step(turn_id, None)
    assert isinstance(requested, ToolCallsRequested)
    # The tool Step runs where the toolset lists no place_order (another Worker, a new listing).
    driver.runner = AdkRunner(shop_agent(model, toolsets, tool_filter=["get_stock"]))
    [record] = await driver.run_tools(turn_id, requested)
    driver.runner = runner  # the resuming RunModel lists it again (see README, Limits)
    final = await driver.model_step(turn_id, requested.framework_run_state)

    assert record.status == "failed"
    assert record.error == texts.UNKNOWN_TOOL.format(name="place_order")
    assert mcp_log.count() == 0
    assert texts.UNKNOWN_TOOL.format(name="place_order") in tool_results_of(model, 1)["o1"]
    assert final.new_messages[-1].text == "The shop has no ordering now."  # type: ignore[union-attr]


async def test_a_toolset_that_requires_confirmation_asks_for_an_approval_and_then_runs(
    model: ScriptedModelServer, toolsets: list[McpToolset], mcp_log: ToolRunLog
) -> None:
    agent = shop_agent(model, toolsets, require_confirmation=True)
    driver = RunnerDriver(AdkRunner(agent), default_tool_effect="read")
    model.enqueue(
        reply_tools(("o1", "place_order", {"item": "kettle", "quantity": 1})),
        reply_text("Ordered."),
    )
    result = await driver.turn("Order a kettle.")

    [record] = result.records
    assert (record.requires_approval, record.status) == (True, "succeeded")
    # Approved by dex-agents, the McpTool's own confirmation does not ask again: it ran once.
    assert [e["item"] for e in mcp_log.entries("place_order")] == ["kettle"]
    assert mcp_text(tool_results_of(model, 1)["o1"]) == "ordered 1 kettle"
