"""A copy of a `create_agent` graph whose tool node defers every tool call with `interrupt()`.

The copy's ToolNode keeps the application's own `wrap_tool_call`/`awrap_tool_call` middleware
chain; only the innermost `execute` is replaced: it interrupts with the call, and on resume
returns the recorded result as the call's ToolMessage without running the tool. A call of an
enabled built-in or of a tool source's tool (offer.py) interrupts without the application's
middleware: it is not one of the application's tools.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from dex_agents.errors import DexAgentsError
from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest, ToolNode
from langgraph.pregel import Pregel
from langgraph.types import Command, interrupt

from . import _compat
from .command import recorded_update, resumed_result
from .offer import runner_owns

TOOLS_NODE = "tools"


class UnsupportedGraphError(DexAgentsError, TypeError):
    """The graph is not one the LangGraph runner can drive one model call per Step."""


def deferred_result(request: ToolCallRequest) -> ToolMessage | Command[Any]:
    """Interrupts with the call; on resume, its recorded result (and the tool's state update,
    when its tool returned a Command: command.py)."""
    call = request.tool_call
    answer: dict[str, Any] = interrupt(
        {"tool_call_id": call["id"], "tool_name": call["name"], "arguments": call["args"]}
    )
    message = ToolMessage(
        content=answer["content"],
        status=answer["status"],
        tool_call_id=call["id"] or "",
        name=call["name"],
    )
    return resumed_result(message, recorded_update(answer.get("framework_data")))


async def _adeferred_result(request: ToolCallRequest) -> ToolMessage | Command[Any]:
    return deferred_result(request)


AsyncWrapper = Callable[
    [ToolCallRequest, Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]]],
    Awaitable[ToolMessage | Command[Any]],
]


def _deferring_wrapper(node: ToolNode) -> AsyncWrapper:
    user_async, user_sync = _compat.tool_call_wrappers(node)

    async def wrapper(request: ToolCallRequest, _execute: Any) -> ToolMessage | Command[Any]:
        if runner_owns(request.tool_call["name"]):
            return deferred_result(request)  # a built-in's or a source's: not the app's tool
        if user_async is not None:
            return await user_async(request, _adeferred_result)
        if user_sync is not None:
            return user_sync(request, deferred_result)
        return deferred_result(request)

    return wrapper


def tool_node_of(graph: Pregel[Any, Any, Any, Any]) -> ToolNode:
    node = graph.nodes.get(TOOLS_NODE)
    bound = node.bound if node is not None else None
    if not isinstance(bound, ToolNode):
        raise UnsupportedGraphError(
            "the LangGraph runner drives agents built by langchain.agents.create_agent (a "
            f"ToolNode named {TOOLS_NODE!r}); this graph has none, so its tool calls cannot be "
            "deferred to tool Steps"
        )
    return bound


HUMAN_IN_THE_LOOP_PREFIX = "HumanInTheLoopMiddleware."
DEFERRED_CALL_KEYS = frozenset({"tool_call_id", "tool_name", "arguments"})


def refuse_human_in_the_loop(graph: Pregel[Any, Any, Any, Any]) -> None:
    if any(name.startswith(HUMAN_IN_THE_LOOP_PREFIX) for name in graph.nodes):
        raise UnsupportedGraphError(
            "the agent uses HumanInTheLoopMiddleware, whose interrupts the LangGraph runner "
            "cannot tell from its own deferred tool calls; remove it and give the tools "
            "ToolPolicy(requires_approval=True): dex-agents runs the approvals"
        )


def is_deferred_call(value: object) -> bool:
    """Whether an interrupt's value is one this module's tool node raised."""
    return isinstance(value, dict) and value.keys() >= DEFERRED_CALL_KEYS


def deferring_graph(graph: Pregel[Any, Any, Any, Any]) -> Pregel[Any, Any, Any, Any]:
    """A copy of `graph` whose tool node defers every call; `graph` is not changed."""
    original = tool_node_of(graph)
    refuse_human_in_the_loop(graph)
    deferring = ToolNode(
        list(original.tools_by_name.values()),
        name=original.name or TOOLS_NODE,
        tags=list(original.tags or ()),
        handle_tool_errors=_compat.handle_tool_errors(original),
        messages_key=_compat.messages_key(original),
        awrap_tool_call=_deferring_wrapper(original),
    )
    nodes = dict(graph.nodes)
    nodes[TOOLS_NODE] = graph.nodes[TOOLS_NODE].copy({"bound": deferring})
    return graph.copy({"nodes": nodes})
