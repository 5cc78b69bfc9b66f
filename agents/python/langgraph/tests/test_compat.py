"""The canary of _compat.py: every LangGraph and LangChain internal the adapter uses, as it uses
it, on the real classes and in process. An upgrade of `langgraph`, `langgraph-prebuilt` or
`langchain` that renames an attribute, changes a signature or a closure fails here, by name,
before any turn misbehaves."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Annotated, Any

from langchain.agents import create_agent
from langchain.tools import InjectedState, InjectedStore, ToolRuntime
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph._internal._constants import CONFIG_KEY_RUNTIME
from langgraph.prebuilt.tool_node import ToolCallRequest, ToolNode, _InjectedArgs
from langgraph.runtime import Runtime, get_runtime
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command

from dex_agents_langgraph import _compat


@tool
def plain(topic: str) -> str:
    """Takes nothing injected."""
    return topic


@tool
def with_everything(
    topic: str,
    runtime: ToolRuntime,
    messages: Annotated[list[AnyMessage], InjectedState("messages")],
    store: Annotated[BaseStore, InjectedStore()],
) -> str:
    """Takes the runtime, a state field and the store."""
    return topic


def parameters(function: object) -> list[str]:
    return list(inspect.signature(function).parameters)  # type: ignore[arg-type]


def test_the_tool_node_keeps_its_injected_arguments_per_tool() -> None:
    assert {f.name for f in dataclasses.fields(_InjectedArgs)} >= {"state", "store", "runtime"}
    node = ToolNode([plain, with_everything])
    assert _compat.injected_args(node, "plain") == _compat.InjectedArgs(False, False, False)
    assert _compat.injected_args(node, "with_everything") == _compat.InjectedArgs(
        state=True, store=True, runtime=True
    )
    assert _compat.injected_args(node, "absent") is None


def test_the_tool_node_injects_a_calls_arguments_from_a_runtime() -> None:
    assert parameters(ToolNode._inject_tool_args) == ["self", "tool_call", "tool_runtime", "tool"]
    node = ToolNode([with_everything])
    store = InMemoryStore()
    question = HumanMessage("hello")
    runtime = ToolRuntime(
        state={"messages": [question]},
        context=None,
        config={},
        stream_writer=lambda _: None,
        tool_call_id="call-1",
        store=store,
        tools=[with_everything],
    )
    call = {"name": "with_everything", "args": {"topic": "t"}, "id": "call-1", "type": "tool_call"}
    injected = _compat.inject_tool_args(node, call, runtime, with_everything)  # type: ignore[arg-type]
    assert injected["args"]["topic"] == "t"
    assert injected["args"]["runtime"] is runtime
    assert injected["args"]["messages"] == [question]
    assert injected["args"]["store"] is store


def test_the_tool_node_keeps_the_settings_it_was_built_with() -> None:
    def wrap(request: ToolCallRequest, execute: Callable[[ToolCallRequest], Any]) -> Any:
        return execute(request)

    async def awrap(request: ToolCallRequest, execute: Any) -> Any:
        return await execute(request)

    node = ToolNode(
        [plain],
        handle_tool_errors="try again",
        messages_key="chat",
        wrap_tool_call=wrap,
        awrap_tool_call=awrap,
    )
    assert _compat.tool_call_wrappers(node) == (awrap, wrap)
    assert _compat.handle_tool_errors(node) == "try again"
    assert _compat.messages_key(node) == "chat"
    assert _compat.tool_call_wrappers(ToolNode([plain])) == (None, None)


def test_a_tool_outside_the_graph_finds_its_runtime_under_the_nodes_config_key() -> None:
    assert _compat.CONFIG_KEY_RUNTIME == CONFIG_KEY_RUNTIME
    runtime = Runtime(context="ctx", stream_writer=lambda _: None)

    @tool
    def read_context(topic: str) -> str:
        """Reads the runtime's context."""
        return str(get_runtime().context)

    answer = read_context.invoke(
        {"topic": "t"}, {"configurable": {_compat.CONFIG_KEY_RUNTIME: runtime}}
    )
    assert answer == "ctx"


def test_a_commands_update_reads_as_pairs_in_every_form() -> None:
    message = ToolMessage("done", tool_call_id="c")
    assert list(_compat.command_update(Command(update={"messages": [message], "n": 1}))) == [
        ("messages", [message]),
        ("n", 1),
    ]
    assert list(_compat.command_update(Command(update=[("n", 2)]))) == [("n", 2)]
    assert list(_compat.command_update(Command(goto="x"))) == []


def test_create_agents_model_node_holds_the_model_and_the_innermost_calls() -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("hi"), AIMessage("again")]))
    graph = create_agent(model, [])
    bound = graph.nodes["model"].bound
    assert _compat.agent_model(bound) is model
    for attribute, cell in _compat.EXECUTE_CELLS.items():
        function = getattr(bound, attribute)
        assert cell in function.__code__.co_freevars, (attribute, cell)
    assert _compat.agent_model(graph.nodes["__start__"].bound) is None
    assert _compat.with_wrapped_execute(object(), lambda execute: execute) is None


async def test_a_wrapped_innermost_call_sees_every_request_sync_and_async() -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("hi"), AIMessage("again")]))
    graph = create_agent(model, [])
    node = graph.nodes["model"]
    seen: list[str] = []

    def wrap(execute: Callable[[Any], Any]) -> Callable[[Any], Any]:
        if inspect.iscoroutinefunction(execute):

            async def run_async(request: Any) -> Any:
                seen.append("async")
                return await execute(request)

            return run_async

        def run(request: Any) -> Any:
            seen.append("sync")
            return execute(request)

        return run

    replaced = _compat.with_wrapped_execute(node.bound, wrap)
    assert replaced is not None and replaced is not node.bound
    copy = graph.copy({"nodes": {**graph.nodes, "model": node.copy({"bound": replaced})}})
    answer = await copy.ainvoke({"messages": [HumanMessage("hello")]})
    assert answer["messages"][-1].text == "hi"
    assert copy.invoke({"messages": [HumanMessage("hello")]})["messages"][-1].text == "again"
    assert seen == ["async", "sync"]
    # The application's graph is unchanged.
    assert _compat.agent_model(graph.nodes["model"].bound) is model
    assert graph.nodes["model"].bound.afunc is not replaced.afunc
