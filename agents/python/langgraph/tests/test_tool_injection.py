"""Tools that take injected arguments (`ToolRuntime`, `InjectedState`, `InjectedToolCallId`,
`InjectedStore`) get them in the tool Step, from the turn's checkpoint: real tools, the real
ChatOpenAI client against the scripted server, driven in memory as the session Flow drives a
runner (a Worker runs them in tests/test_worker_features.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

import pytest
from dex_agents.runner import ToolExecutionError
from dex_agents.testing import RunnerDriver, ScriptedModelServer
from dex_agents.testing.model_server import reply_text, reply_tools
from langchain.agents import create_agent
from langchain.tools import InjectedState, InjectedStore, InjectedToolCallId, ToolRuntime
from langchain_core.messages import AnyMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command

from dex_agents_langgraph import LangGraphRunner
from dex_agents_langgraph.command import NO_TOOL_MESSAGE, NOT_AN_UPDATE

from .test_runner import chat_model


@tool
def count_messages(topic: str, runtime: ToolRuntime) -> str:
    """Counts the conversation's messages."""
    messages = runtime.state["messages"]
    thread = runtime.config["configurable"]["thread_id"]
    return (
        f"{len(messages)} messages, last from {messages[-1].type}, "
        f"call {runtime.tool_call_id}, thread {thread}, store {runtime.store is not None}"
    )


@tool
def first_question(
    topic: str,
    messages: Annotated[list[AnyMessage], InjectedState("messages")],
    call_id: Annotated[str, InjectedToolCallId],
) -> str:
    """The user's first question."""
    return f"{messages[0].text} ({call_id})"


@tool
def remember(note: str, store: Annotated[BaseStore, InjectedStore()]) -> str:
    """Keeps a note."""
    store.put(("notes",), "latest", {"note": note})
    return f"kept {note}"


@tool
def go_elsewhere(node: str, call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
    """Moves control in the graph."""
    return Command(goto=node, update={"messages": [ToolMessage(node, tool_call_id=call_id)]})


@tool
def forget_the_answer(call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
    """Updates the state without answering the call."""
    return Command(update={"messages": []})


TOOLS = [count_messages, first_question, remember, go_elsewhere, forget_the_answer]


def driver(model: ScriptedModelServer, store: BaseStore | None = None) -> RunnerDriver:
    agent = create_agent(chat_model(model), TOOLS, store=store)
    return RunnerDriver(LangGraphRunner(agent), default_tool_effect="read")


def tool_outputs(model: ScriptedModelServer, index: int) -> dict[str, Any]:
    messages = model.requests[index].body["messages"]
    return {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}


async def test_runtime_and_state_are_the_turns_state_when_the_model_asked(
    model: ScriptedModelServer,
) -> None:
    session = driver(model)
    model.enqueue(reply_text("Hello."))
    await session.turn("What is the weather?")
    model.enqueue(
        reply_tools(
            ("c1", "count_messages", {"topic": "a"}), ("c2", "first_question", {"topic": "b"})
        )
    )
    model.enqueue(reply_text("Done."))
    await session.turn("Count them.")
    # The state holds the stored turn (2 messages), the new question and the model's call.
    assert tool_outputs(model, 2) == {
        "c1": "4 messages, last from ai, call c1, thread turn-2, store False",
        "c2": "What is the weather? (c2)",
    }


async def test_a_store_the_agent_has_is_given_to_the_tool(model: ScriptedModelServer) -> None:
    store = InMemoryStore()
    session = driver(model, store)
    model.enqueue(reply_tools(("c1", "remember", {"note": "ana likes tea"})))
    model.enqueue(reply_text("Kept."))
    await session.turn("Remember that Ana likes tea.")
    item = store.get(("notes",), "latest")
    assert item is not None and item.value == {"note": "ana likes tea"}
    assert tool_outputs(model, 1) == {"c1": "kept ana likes tea"}


async def test_a_store_tool_without_a_store_fails_as_a_result_the_model_reads(
    model: ScriptedModelServer,
) -> None:
    session = driver(model)
    model.enqueue(reply_tools(("c1", "remember", {"note": "x"})))
    model.enqueue(reply_text("Could not."))
    result = await session.turn("Remember x.")
    assert [(r.status, "store" in (r.error or "")) for r in result.records] == [("failed", True)]


async def test_a_tool_step_without_the_turn_refuses_a_state_tool(
    model: ScriptedModelServer,
) -> None:
    session = driver(model)
    model.enqueue(reply_tools(("c1", "count_messages", {"topic": "a"})))
    turn_id = session.start_turn("Count.")
    requested = await session.model_step(turn_id, None)
    record = session.approved_record(turn_id, requested.tool_calls[0])  # type: ignore[union-attr]
    execution = session.execution(record)
    assert execution.turn is not None
    with pytest.raises(ToolExecutionError, match="given no turn"):
        await session.runner.execute_deferred_tool_call(replace(execution, turn=None))


async def test_a_command_that_moves_control_or_answers_nothing_fails_as_the_model_reads(
    model: ScriptedModelServer,
) -> None:
    # A Command's update is carried (tests/test_worker_features.py); goto is not.
    session = driver(model)
    model.enqueue(
        reply_tools(("c1", "go_elsewhere", {"node": "model"}), ("c2", "forget_the_answer", {})),
        reply_text("Sorry."),
    )
    result = await session.turn("Go.")
    assert [(r.status, r.error) for r in result.records] == [
        ("failed", NOT_AN_UPDATE.format(name="go_elsewhere", what="goto")),
        ("failed", NO_TOOL_MESSAGE.format(name="forget_the_answer", call_id="c2")),
    ]
    assert tool_outputs(model, 1)["c1"].endswith(
        "only Command(update=...) can be carried from a tool Step into the graph"
    )
