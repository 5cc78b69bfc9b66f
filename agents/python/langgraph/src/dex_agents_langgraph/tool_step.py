"""The arguments LangGraph injects into a tool (`ToolRuntime`, `InjectedState`, `InjectedStore`,
`InjectedToolCallId`), given in the tool Step as the graph's ToolNode would give them.

The state is the graph's state as it was when the model asked for the call: the turn's
checkpoint that the RunModel Step stored, read through `DeferredToolExecution.turn`; the
context is the run context of the turn's session settings (context.py); the stream writer
writes session events (custom.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from dex_agents.runner import DeferredToolExecution, ToolExecutionError
from langchain_core.messages import ToolCall
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.prebuilt.tool_node import ToolNode, ToolRuntime
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from . import _compat
from .custom import event_stream_writer

StateReader = Callable[[DeferredToolExecution], Awaitable[dict[str, Any]]]
ContextReader = Callable[[DeferredToolExecution], Any]

NO_TURN = (
    "tool {name!r} reads the graph's state (ToolRuntime or InjectedState), but this tool Step "
    "was given no turn to read it from"
)


def tool_config(
    execution: DeferredToolExecution, runtime: Runtime[Any] | None = None
) -> RunnableConfig:
    """The config a tool gets: the turn's thread, the Step's IDs in its metadata, and the
    graph runtime that `get_stream_writer()` and `get_runtime()` read, when given."""
    configurable: dict[str, Any] = {"thread_id": execution.turn_id}
    if runtime is not None:
        configurable[_compat.CONFIG_KEY_RUNTIME] = runtime
    return {
        "configurable": configurable,
        "metadata": {
            "dex_agents_flow_id": execution.flow_id,
            "dex_agents_step_execution_id": execution.step_execution_id,
        },
    }


async def injected_call(
    node: ToolNode,
    tool: BaseTool,
    call: ToolCall,
    execution: DeferredToolExecution,
    read_state: StateReader,
    store: BaseStore | None,
    read_context: ContextReader,
) -> ToolCall:
    """`call` with the tool's injected arguments filled in; unchanged for a tool that takes
    none (`InjectedToolCallId` alone is filled in by the tool itself from the call)."""
    injected = _compat.injected_args(node, tool.name)
    if injected is None or not (injected.state or injected.store or injected.runtime):
        return call
    state: dict[str, Any] = {}
    if injected.state or injected.runtime:
        if execution.turn is None:
            raise ToolExecutionError(NO_TURN.format(name=tool.name))
        state = await read_state(execution)
    runtime = ToolRuntime(
        state=state,
        context=read_context(execution) if injected.runtime else None,
        config=tool_config(execution),
        stream_writer=event_stream_writer(execution.events),
        tool_call_id=call["id"],
        store=store,
        tools=list(node.tools_by_name.values()),
    )
    try:
        return _compat.inject_tool_args(node, call, runtime, tool)
    except (ValueError, KeyError, AttributeError) as error:
        raise ToolExecutionError(f"tool {tool.name!r}: {error}") from error
