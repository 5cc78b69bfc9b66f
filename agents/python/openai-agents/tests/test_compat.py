"""The canary of _compat.py: every OpenAI Agents SDK internal the adapter uses, as it uses it,
on the SDK's real classes and in process (no server is started, nothing is sent). An upgrade of
`openai-agents` that renames a field, changes a signature or a type fails here, by name, before
any turn misbehaves."""

from __future__ import annotations

import dataclasses
import inspect
import sys
from typing import Any

from agents import Agent, FunctionTool, Handoff, RunContextWrapper, function_tool, handoff
from agents.mcp import MCPServer, MCPServerStdio, MCPUtil
from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
from agents.models.openai_responses import OpenAIResponsesModel
from mcp.types import Tool as MCPTool
from openai import AsyncOpenAI
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
