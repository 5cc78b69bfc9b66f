"""Every part of the OpenAI Agents SDK that is not its public API, in one place.

The runner gates the application's tools and runs each call in its own tool Step, and the SDK
gives no public way to do seven things it needs:

- tell an MCP server's tool from a function tool, and find its server and name:
  `FunctionTool._mcp_tool_binding`;
- tell a tool left with the SDK's default error formatter (which turns an exception into text
  the model reads) from one the application gave a formatter:
  `FunctionTool._use_default_failure_error_function`;
- convert a tool's output as the SDK does, and leave it out of a gated copy:
  `FunctionTool._output_type_adapter`;
- follow and redirect a `handoff()`'s target agent: `Handoff._agent_ref`;
- the error formatter an MCP server's tools use: `MCPServer._get_failure_error_function`;
- the OpenAI client of the SDK's OpenAI models, to warm it up: their `_client`;
- give a warm run state (kept between a turn's model Steps, see the runner) the Step's own
  context, as `RunState.from_json(context_override=...)` gives a restored one:
  `RunState._context`;
- give the function tool outputs of a restored run state the key order the SDK creates them
  in (`ItemHelpers.tool_call_output_item`), which `RunState.from_json` changes:
  `RunState._generated_items`.

The `openai-agents` requirement is pinned to a minor version for this reason, and
tests/test_compat.py checks every name, type and signature used here, so an upgrade that
changes one fails in that one test, by name.
"""

from __future__ import annotations

import weakref
from typing import Any, cast

from agents import Agent, FunctionTool, Handoff, RunState, ToolCallOutputItem
from agents.mcp import MCPServer
from agents.tool import ToolErrorFunction
from pydantic import TypeAdapter

McpToolBinding = tuple[str, str, int | None]
"""(server name, the tool's name on the server, the server's index in `agent.mcp_servers`)."""


def mcp_tool_binding(tool: FunctionTool) -> McpToolBinding | None:
    """Where an MCP server's tool comes from; None for a function tool."""
    return tool._mcp_tool_binding


def uses_default_failure_error_function(tool: FunctionTool) -> bool:
    """Whether the tool turns an exception into the SDK's default model-visible text."""
    return tool._use_default_failure_error_function


def output_type_adapter(tool: FunctionTool) -> TypeAdapter[Any] | None:
    """The adapter the SDK converts the tool's output with, when its output has a type."""
    return tool._output_type_adapter


def drop_output_type_adapter(tool: FunctionTool) -> None:
    """Leaves the output's conversion out of `tool` (a copy that never runs the function)."""
    tool._output_type_adapter = None


def handoff_target(item: Handoff[Any, Any]) -> Agent[Any] | None:
    """The agent a `handoff()` hands off to, while it lives; None for another handoff."""
    ref = item._agent_ref
    target = ref() if ref is not None else None
    return target if isinstance(target, Agent) else None


def set_handoff_target(item: Handoff[Any, Any], agent: Agent[Any]) -> None:
    """Makes `agent` the handoff's target agent (the handoff keeps it weakly, as the SDK does)."""
    item._agent_ref = weakref.ref(agent)


def server_failure_error_function(
    server: MCPServer, agent_function: ToolErrorFunction | None
) -> ToolErrorFunction | None:
    """The error formatter the server's tools use: the server's own, else the agent's."""
    return server._get_failure_error_function(agent_function)


def model_openai_client(model: object) -> object | None:
    """The OpenAI client of an SDK model built on one (`OpenAIResponsesModel`,
    `OpenAIChatCompletionsModel`); None for another model."""
    return getattr(model, "_client", None)


def set_run_state_context(state: RunState[Any, Agent[Any]], context: Any) -> None:
    """Makes `context` the run context of a kept run state's next run."""
    wrapper = state._context
    if wrapper is None:
        raise ValueError("the run state has no run context to set")
    wrapper.context = context


CREATED_ORDER = ("call_id", "output", "type")
"""The keys of a function tool output in the order the SDK creates them."""


def tool_outputs_as_created(state: RunState[Any, Agent[Any]]) -> None:
    """Puts the keys of a restored run state's function tool outputs back in the order the SDK
    created them. The model receives each output as its keys come: restored in another order,
    the same items would reach it in other bytes than in the turn's request before (a prompt
    cache's prefix lost) and than from a warm run state."""
    for item in state._generated_items:
        raw: object = item.raw_item if isinstance(item, ToolCallOutputItem) else None
        if isinstance(raw, dict) and raw.get("type") == "function_call_output":
            first = {key: raw[key] for key in CREATED_ORDER if key in raw}
            item.raw_item = cast(Any, {**first, **raw})
