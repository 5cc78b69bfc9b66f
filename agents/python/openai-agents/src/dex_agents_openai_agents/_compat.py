"""Every part of the OpenAI Agents SDK that is not its public API, in one place.

The runner gates the application's tools and runs each call in its own tool Step, and the SDK
gives no public way to do eight things it needs:

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
  `RunState._generated_items`;
- take a run's state and its own items from its result without the copy and conversion of the
  whole history that `to_state()` and `to_input_list()` make (a warm model Step's cost grew with
  the session's length for them alone): `RunResultStreaming._original_input`, `.input` and
  `._nested_history_owned_session_item_refs`, and `RunState._original_input`.

The `openai-agents` requirement is pinned to a minor version for this reason, and
tests/test_compat.py checks every name, type and signature used here, so an upgrade that
changes one fails in that one test, by name.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

from agents import Agent, FunctionTool, Handoff, RunResultStreaming, RunState, ToolCallOutputItem
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


def history_left_out(result: RunResultStreaming) -> list[Any] | None:
    """The run's original input, when `history_out` may leave it out of the result: a list,
    the same in the result's public input and in what its state would keep, and no item of it
    owned by a nested history (the SDK's agent-as-tool and nested handoff history), whose
    references point into it. None otherwise: take the SDK's own full calls."""
    original = result._original_input if result._original_input is not None else result.input
    if not isinstance(original, list) or result._nested_history_owned_session_item_refs:
        return None
    return original if result.input == original else None


@contextmanager
def history_out(result: RunResultStreaming) -> Iterator[None]:
    """Leaves the original input (see `history_left_out`) out of `result` while the block runs:
    `to_input_list()` then gives the run's own items only, and `to_state()` a state without
    the history, instead of deep-copying it; `keep_history` gives that state its history."""
    original, public = result._original_input, result.input
    result._original_input, result.input = [], []
    try:
        yield
    finally:
        result._original_input, result.input = original, public


def keep_history(state: RunState[Any, Agent[Any]], original: list[Any]) -> None:
    """Gives a state taken under `history_out` the run's original input, copied as the SDK
    copies input items between the runs of a turn (`copy_input_items`: the list, not its
    items); `to_state()` would deep-copy it."""
    state._original_input = list(original)
