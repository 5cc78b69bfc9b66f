"""The canary of _compat.py: every OpenAI Agents SDK internal the adapter uses, as it uses it,
on the SDK's real classes and in process (no server is started, nothing is sent). An upgrade of
`openai-agents` that renames a field, changes a signature or a type fails here, by name, before
any turn misbehaves."""

from __future__ import annotations

import dataclasses
import inspect
import sys
from typing import Any

from agents import (
    Agent,
    FunctionTool,
    Handoff,
    ItemHelpers,
    RunContextWrapper,
    RunResultStreaming,
    RunState,
    ToolCallOutputItem,
    function_tool,
    handoff,
)
from agents.mcp import MCPServer, MCPServerStdio, MCPUtil
from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
from agents.models.openai_responses import OpenAIResponsesModel
from mcp.types import Tool as MCPTool
from openai import AsyncOpenAI
from openai.types.responses import ResponseFunctionToolCall
from pydantic import TypeAdapter

from dex_agents_openai_agents import _compat


def lookup(order_id: str) -> str:
    """Looks an order up."""
    return order_id


def formatter(context: RunContextWrapper[Any], error: Exception) -> str:
    return f"failed: {error}"


def field_names(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def server(**options: Any) -> MCPServerStdio:
    """A stdio server that is never connected."""
    return MCPServerStdio(params={"command": sys.executable, "args": []}, name="orders", **options)


def test_an_mcp_tool_is_told_from_a_function_tool_by_its_binding() -> None:
    assert "_mcp_tool_binding" in field_names(FunctionTool)
    assert _compat.mcp_tool_binding(function_tool(lookup)) is None
    tool = MCPUtil.to_function_tool(
        MCPTool(name="lookup_order", input_schema={"type": "object"}), server(), False
    )
    binding = _compat.mcp_tool_binding(tool)
    assert binding is not None
    server_name, name, index = binding
    assert (name, index) == ("lookup_order", None)
    assert isinstance(server_name, str)


def test_a_tool_says_whether_it_keeps_the_default_error_formatter() -> None:
    assert "_use_default_failure_error_function" in field_names(FunctionTool)
    assert _compat.uses_default_failure_error_function(function_tool(lookup)) is True
    chosen = function_tool(lookup, failure_error_function=formatter)
    assert _compat.uses_default_failure_error_function(chosen) is False
    assert (
        _compat.uses_default_failure_error_function(
            function_tool(lookup, failure_error_function=None)
        )
        is False
    )


def test_a_tools_output_adapter_is_read_and_dropped() -> None:
    assert "_output_type_adapter" in field_names(FunctionTool)
    adapter = TypeAdapter(int)
    tool = dataclasses.replace(function_tool(lookup), _output_type_adapter=adapter)
    assert _compat.output_type_adapter(tool) is adapter
    _compat.drop_output_type_adapter(tool)
    assert _compat.output_type_adapter(tool) is None
    assert _compat.output_type_adapter(function_tool(lookup)) is None


def test_a_handoffs_target_agent_is_followed_and_redirected() -> None:
    assert "_agent_ref" in field_names(Handoff)
    billing = Agent(name="Billing")
    item = handoff(billing)
    assert _compat.handoff_target(item) is billing
    gated = Agent(name="Billing (gated)")
    _compat.set_handoff_target(item, gated)
    assert _compat.handoff_target(item) is gated
    assert item.agent_name == "Billing"  # the handoff's own name is left as it was


def test_an_mcp_servers_error_formatter_wins_over_the_agents() -> None:
    assert list(inspect.signature(MCPServer._get_failure_error_function).parameters) == [
        "self",
        "agent_failure_error_function",
    ]
    assert _compat.server_failure_error_function(server(), formatter) is formatter
    assert _compat.server_failure_error_function(server(), None) is None
    own = server(failure_error_function=None)
    assert _compat.server_failure_error_function(own, formatter) is None


def test_the_sdks_openai_models_keep_their_client() -> None:
    client = AsyncOpenAI(api_key="test", base_url="http://127.0.0.1:9")
    for model in (
        OpenAIResponsesModel(model="gpt-test", openai_client=client),
        OpenAIChatCompletionsModel(model="gpt-test", openai_client=client),
    ):
        assert _compat.model_openai_client(model) is client
    assert _compat.model_openai_client(object()) is None


async def test_a_run_state_takes_the_steps_context_and_its_outputs_their_created_order() -> None:
    assert {"_context", "_generated_items"} <= field_names(RunState)
    agent = Agent(name="Support")
    state: RunState[Any, Agent[Any]] = RunState(
        context=RunContextWrapper(context={"step": 1}),
        original_input="Hi",
        starting_agent=agent,
    )
    call = ResponseFunctionToolCall(
        type="function_call", call_id="c1", name="lookup", arguments="{}"
    )
    created = ItemHelpers.tool_call_output_item(call, "done")
    assert tuple(created) == _compat.CREATED_ORDER
    state._generated_items = [ToolCallOutputItem(agent=agent, raw_item=created, output="done")]
    restored = await RunState.from_json(agent, state.to_json())
    raw = restored._generated_items[0].raw_item
    assert isinstance(raw, dict) and tuple(raw) != _compat.CREATED_ORDER  # what it fixes

    _compat.tool_outputs_as_created(restored)
    _compat.set_run_state_context(restored, {"step": 2})

    assert restored._generated_items[0].raw_item == created
    assert tuple(restored._generated_items[0].raw_item) == _compat.CREATED_ORDER
    assert restored._context is not None and restored._context.context == {"step": 2}


def test_a_result_keeps_its_history_where_history_out_leaves_it_out() -> None:
    """The behaviour is tested on a real run (test_warm.py); these are the names it uses."""
    names = {"input", "_original_input", "_nested_history_owned_session_item_refs"}
    assert names <= field_names(RunResultStreaming)
    assert "_original_input" in field_names(RunState)
