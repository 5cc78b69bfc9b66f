"""Every part of LangGraph and LangChain that is not their public API, in one place.

The runner drives a `create_agent` graph one model call per Step, and LangGraph gives no
public way to do four things it needs:

- rebuild the graph's `ToolNode` with the application's own settings and `wrap_tool_call`
  middleware (deferral.py) and inject a tool's `ToolRuntime`/`InjectedState`/`InjectedStore`
  arguments outside the graph, in the tool Step (tool_step.py): the ToolNode's private
  attributes and `_inject_tool_args` (langgraph-prebuilt);
- give a tool run outside the graph the runtime that `get_stream_writer()` and
  `get_runtime()` read (tool_step.py): the config key a graph's nodes find it under (langgraph);
- read a tool's `Command(update=...)` as LangGraph's reducers do (command.py):
  `Command._update_as_tuples` (langgraph);
- find the chat model `create_agent` was given, and put a function in front of its innermost
  model call (retries.py): the closure of the model node's `model_node`/`amodel_node`, whose
  cells `model`, `_execute_model_sync` and `_execute_model_async` are named in
  `langchain.agents.factory` (langchain), held by LangGraph's `RunnableCallable` as
  `func`/`afunc`.

The `langchain`, `langgraph` and `langgraph-prebuilt` requirements are pinned to a minor
version for this reason, and tests/test_compat.py checks every name, signature and attribute
used here, so an upgrade that changes one fails in that one test, by name.
"""

from __future__ import annotations

import copy
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from langchain_core.messages import ToolCall
from langchain_core.tools import BaseTool
from langgraph.prebuilt.tool_node import (
    AsyncToolCallWrapper,
    ToolCallWrapper,
    ToolNode,
    ToolRuntime,
)
from langgraph.types import Command

# ToolNode ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InjectedArgs:
    """Which graph values a tool takes as injected arguments (ToolNode's `_InjectedArgs`)."""

    state: bool
    store: bool
    runtime: bool


def injected_args(node: ToolNode, tool_name: str) -> InjectedArgs | None:
    """What the tool named `tool_name` takes injected; None for a tool the node has not."""
    found = node._injected_args.get(tool_name)
    if found is None:
        return None
    return InjectedArgs(
        state=bool(found.state), store=found.store is not None, runtime=found.runtime is not None
    )


def inject_tool_args(
    node: ToolNode, call: ToolCall, runtime: ToolRuntime[Any, Any], tool: BaseTool
) -> ToolCall:
    """`call` with its injected arguments filled in from `runtime`, as the node does."""
    return node._inject_tool_args(call, runtime, tool)


def tool_call_wrappers(
    node: ToolNode,
) -> tuple[AsyncToolCallWrapper | None, ToolCallWrapper | None]:
    """The application's `awrap_tool_call` and `wrap_tool_call` middleware chains."""
    return node._awrap_tool_call, node._wrap_tool_call


HandleToolErrors = bool | str | Callable[..., str] | type[Exception] | tuple[type[Exception], ...]


def handle_tool_errors(node: ToolNode) -> HandleToolErrors:
    """The node's `handle_tool_errors` setting, as it was given."""
    setting: HandleToolErrors = node._handle_tool_errors
    return setting


def messages_key(node: ToolNode) -> str:
    """The state key the node reads the model's tool calls from."""
    return node._messages_key


# The runtime of a node -----------------------------------------------------------------------

CONFIG_KEY_RUNTIME: Final = "__pregel_runtime"
"""Where LangGraph's `get_stream_writer()` and `get_runtime()` find the node's runtime in the
config's `configurable`."""


# Command -------------------------------------------------------------------------------------


def command_update(command: Command[Any]) -> Sequence[tuple[str, Any]]:
    """A Command's update as (state key, value) pairs, whatever form it was given in (a dict,
    pairs, or a state object), as LangGraph's reducers read it."""
    return command._update_as_tuples()


# create_agent's model node -------------------------------------------------------------------

MODEL_CELL: Final = "model"
"""The closure cell of `create_agent`'s model node that holds the chat model it was given."""
EXECUTE_CELLS: Final = {"afunc": "_execute_model_async", "func": "_execute_model_sync"}
"""The model node's `RunnableCallable` functions, and each one's closure cell holding the
innermost model call (the one the `wrap_model_call` middleware chain wraps)."""

Execute = Callable[[Any], Any]


def agent_model(bound: object) -> Any | None:
    """The chat model a `create_agent` model node (`bound`) was given; None for another node."""
    return _cell(getattr(bound, "afunc", None), MODEL_CELL)


def with_wrapped_execute(bound: object, wrap: Callable[[Execute], Execute]) -> Any | None:
    """A copy of a `create_agent` model node (`bound`) whose innermost model calls are
    `wrap(call)`; None for a node that is not `create_agent`'s (`bound` is not changed)."""
    functions = {attribute: getattr(bound, attribute, None) for attribute in EXECUTE_CELLS}
    rebuilt = {
        attribute: _with_cell(function, EXECUTE_CELLS[attribute], wrap) if function else None
        for attribute, function in functions.items()
    }
    if rebuilt["afunc"] is None:
        return None
    replaced = copy.copy(bound)
    for attribute, function in rebuilt.items():
        setattr(replaced, attribute, function)
    return replaced


def _cell(function: Any, name: str) -> Any | None:
    code = getattr(function, "__code__", None)
    if code is None or name not in code.co_freevars or function.__closure__ is None:
        return None
    return function.__closure__[code.co_freevars.index(name)].cell_contents


def _with_cell(
    function: Callable[..., Any], name: str, wrap: Callable[[Execute], Execute]
) -> Callable[..., Any] | None:
    """`function` with its closure cell `name` replaced by `wrap(cell)`; None when it has no
    such cell."""
    code = getattr(function, "__code__", None)
    if code is None or name not in code.co_freevars or function.__closure__ is None:
        return None
    cells = list(function.__closure__)
    index = code.co_freevars.index(name)
    cells[index] = types.CellType(wrap(cells[index].cell_contents))
    rebuilt = types.FunctionType(
        code, function.__globals__, function.__name__, function.__defaults__, tuple(cells)
    )
    rebuilt.__kwdefaults__ = function.__kwdefaults__
    return rebuilt
