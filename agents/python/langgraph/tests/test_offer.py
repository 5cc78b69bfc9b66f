"""What the session offers a `create_agent` agent, at the runner: built-in tools as tool
definitions the graph never runs, plan mode's single tool and plan note, the session settings as
the run's context (model and instructions chosen by middleware). A real graph and ChatOpenAI
against the scripted Chat Completions server, driven in memory as the session Flow drives a
runner. The Worker rows, an MCP tool source's among them, are tests/test_features.py."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import pytest
from dex_agents.builtins import BUILT_IN_TOOL_DEFINITIONS, PLAN_NOTE_PLANNING_LINE
from dex_agents.mcp import McpToolSource
from dex_agents.runner import AgentTurnContext, ToolCallsRequested, TurnCompleted
from dex_agents.testing import RunnerDriver, ScriptedModelServer
from dex_agents.testing.model_server import reply_text, reply_tools
from dex_agents.types import AgentPlan, AgentPlanTask
from langchain.agents import create_agent
from langchain.agents.middleware import ModelRequest, ModelResponse, dynamic_prompt, wrap_model_call
from langchain.agents.structured_output import ToolStrategy
from langchain.tools import ToolRuntime
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import BaseModel

from dex_agents_langgraph import LangGraphRunner, UnsupportedGraphError

from .test_runner import CountingMiddleware, Log, chat_model, weather_tools

BUILT_INS = ("ask_user", "durable_wait", "write_todos")
Settings = Mapping[str, Any]


def names(request_body: Mapping[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request_body.get("tools", [])]


def sent(model: ScriptedModelServer, index: int = -1) -> list[tuple[str, Any]]:
    return [(m["role"], m.get("content")) for m in model.requests[index].body["messages"]]


@dataclass
class Session:
    """A RunnerDriver whose contexts carry the session's built-ins, mode, plan and settings."""

    driver: RunnerDriver
    built_ins: tuple[str, ...] = BUILT_INS
    mode: str = "chat"
    plan: AgentPlan | None = None
    settings: Settings | None = None

    def context(self, turn_id: str, run_state: str | None) -> AgentTurnContext:
        return replace(
            self.driver.context(turn_id, run_state),
            enabled_built_in_tools=self.built_ins,
            interaction_mode=self.mode,  # type: ignore[arg-type]
            plan=self.plan,
            session_settings=dict(self.settings or {}),
        )

    async def step(self, turn_id: str, run_state: str | None) -> Any:
        outcome = await self.driver.runner.run_model_step(self.context(turn_id, run_state))
        self.driver.outcomes.append(outcome)
        if isinstance(outcome, ToolCallsRequested):
            self.driver.run_state = outcome.framework_run_state
        for message in outcome.new_messages:
            self.driver.append(turn_id, message)
        return outcome


def session(runner: LangGraphRunner, **kw: Any) -> Session:
    return Session(RunnerDriver(runner, default_tool_effect="read"), **kw)


async def test_built_ins_are_offered_deferred_with_their_policy_and_never_run(
    model: ScriptedModelServer,
) -> None:
    log, middleware = Log(), CountingMiddleware()
    agent = create_agent(chat_model(model), weather_tools(log), middleware=[middleware])
    run = session(LangGraphRunner(agent))
    model.enqueue(reply_tools(("q1", "ask_user", {"question": "Which city?"})))
    model.enqueue(reply_text("Sunny in Oslo, then."))
    turn = run.driver.start_turn("Weather?")
    requested = await run.step(turn, None)

    offered = model.requests[0].body["tools"]
    assert names(model.requests[0].body) == ["get_weather", "send_email", *BUILT_INS]
    assert offered[2:] == [BUILT_IN_TOOL_DEFINITIONS[name] for name in BUILT_INS]
    assert isinstance(requested, ToolCallsRequested)
    (call,) = requested.tool_calls
    assert (call.tool_name, json.loads(call.arguments)) == ("ask_user", {"question": "Which city?"})
    assert call.policy is not None and (call.policy.effect, call.policy.requires_approval) == (
        "read",
        False,
    )
    # The core answers it (its question Step); its result goes back as the call's result.
    record = run.driver.approved_record(turn, call).model_copy(
        update={"status": "succeeded", "output": '{"status":"answered","answer":"Oslo"}'}
    )
    run.driver.records.append(record)
    done = await run.step(turn, requested.framework_run_state)
    assert isinstance(done, TurnCompleted)
    tool_results = [m for m in model.requests[1].body["messages"] if m["role"] == "tool"]
    assert tool_results == [
        {"role": "tool", "tool_call_id": "q1", "content": '{"status":"answered","answer":"Oslo"}'}
    ]
    assert log.calls == [] and middleware.wrapped == []  # the app's tools and hooks never saw it
    assert [(m.role, m.tool_name) for m in done.new_messages] == [
        ("assistant", "ask_user"),
        ("tool", "ask_user"),
        ("assistant", None),
    ]


async def test_an_enabled_built_in_wins_over_an_agent_tool_of_its_name(
    model: ScriptedModelServer,
) -> None:
    ran: list[str] = []

    @tool
    def write_todos(todos: list[str]) -> str:
        """The agent's own list."""
        ran.append("write_todos")
        return "kept"

    agent = create_agent(chat_model(model), [write_todos])
    run = session(LangGraphRunner(agent), built_ins=("write_todos",))
    model.enqueue(reply_tools(("w1", "write_todos", {"todos": []})))
    requested = await run.step(run.driver.start_turn("Plan it."), None)
    assert model.requests[0].body["tools"] == [BUILT_IN_TOOL_DEFINITIONS["write_todos"]]
    assert isinstance(requested, ToolCallsRequested)
    assert requested.tool_calls[0].policy is not None
    assert requested.tool_calls[0].policy.effect == "read"
    # Without the built-in, the agent's own tool is offered and runs in its tool Step.
    own = session(LangGraphRunner(agent), built_ins=())
    model.enqueue(reply_tools(("w2", "write_todos", {"todos": ["a"]})))
    requested = await own.step(own.driver.start_turn("Plan it."), None)
    assert names(model.requests[1].body) == ["write_todos"]
    assert model.requests[1].body["tools"] != [BUILT_IN_TOOL_DEFINITIONS["write_todos"]]
    record = own.driver.approved_record("turn-1", requested.tool_calls[0])
    assert (await own.driver.execute(record)).output == "kept" and ran == ["write_todos"]


class Triage(BaseModel):
    category: str


async def test_a_planning_turn_offers_only_write_todos_after_the_plan_note(
    model: ScriptedModelServer,
) -> None:
    agent = create_agent(
        chat_model(model),
        weather_tools(Log()),
        system_prompt="Be brief.",
        response_format=ToolStrategy(Triage),
    )
    runner = LangGraphRunner(agent)
    assert runner.supports_plan_mode
    run = session(runner)
    model.enqueue(reply_text("Hello."))
    await run.step(run.driver.start_turn("Hi"), None)
    run.mode = "planning"
    model.enqueue(reply_tools(("w1", "write_todos", {"todos": []})))
    await run.step(run.driver.start_turn("Plan the trip."), None)

    body = model.requests[1].body
    assert body["tools"] == [BUILT_IN_TOOL_DEFINITIONS["write_todos"]]
    assert "tool_choice" not in body  # ToolStrategy's forced choice is gone too
    note = f"[Dex] There is no plan yet.\n{PLAN_NOTE_PLANNING_LINE}"
    assert sent(model) == [
        ("system", "Be brief."),
        ("user", "Hi"),
        ("assistant", "Hello."),
        ("user", note),
        ("user", "Plan the trip."),
    ]
    # The note is model input only: never stored.
    assert [m.text for m in run.driver.messages if m.role == "user"] == ["Hi", "Plan the trip."]


async def test_the_plan_note_shows_the_current_plan_at_each_model_call_of_a_turn(
    model: ScriptedModelServer,
) -> None:
    run = session(LangGraphRunner(create_agent(chat_model(model), weather_tools(Log()))))
    run.plan = AgentPlan(
        revision=1,
        status="active",
        tasks=[AgentPlanTask(content="Check Oslo", status="in_progress")],
        updated_at="2026-01-01T00:00:00Z",
    )
    model.enqueue(reply_tools(("c1", "get_weather", {"city": "Oslo"})), reply_text("Sunny."))
    turn = run.driver.start_turn("Go on.")
    requested = await run.step(turn, None)
    await run.driver.run_tools(turn, requested)
    run.plan = run.plan.model_copy(
        update={
            "revision": 2,
            "status": "completed",
            "tasks": [AgentPlanTask(content="Check Oslo", status="completed")],
        }
    )
    await run.step(turn, requested.framework_run_state)
    first, second = sent(model, 0), sent(model, 1)
    assert first[0] == (
        "user",
        "[Dex] The current plan, revision 1, is active:\n- [in_progress] Check Oslo",
    )
    assert second[0] == (
        "user",
        "[Dex] The current plan, revision 2, is completed:\n- [completed] Check Oslo",
    )
    assert [role for role, _ in second] == ["user", "user", "assistant", "tool"]
    assert "get_weather" in names(model.requests[1].body)


def settings_middleware(server: ScriptedModelServer) -> list[Any]:
    """The documented hook: middleware reads the session settings as the run's context."""
    models: dict[str, ChatOpenAI] = {}

    @wrap_model_call
    async def model_from_settings(
        request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        name = (request.runtime.context or {}).get("model", "gpt-test")
        if name not in models:
            models[name] = chat_model(server).model_copy(update={"model_name": name})
        return await handler(request.override(model=models[name]))

    @dynamic_prompt
    def instructions_from_settings(request: ModelRequest[Any]) -> str:
        return str((request.runtime.context or {}).get("instructions", "Default prompt."))

    return [model_from_settings, instructions_from_settings]


async def test_session_settings_choose_the_model_and_instructions_at_the_next_model_call(
    model: ScriptedModelServer,
) -> None:
    agent = create_agent(
        chat_model(model), weather_tools(Log()), middleware=settings_middleware(model)
    )
    run = session(LangGraphRunner(agent))
    model.enqueue(reply_tools(("c1", "get_weather", {"city": "Oslo"})), reply_text("Sunny."))
    turn = run.driver.start_turn("Weather?")
    requested = await run.step(turn, None)
    await run.driver.run_tools(turn, requested)
    # Settings updated between the Steps of a running turn apply at its next model call.
    run.settings = {"model": "gpt-other", "instructions": "Answer in French."}
    await run.step(turn, requested.framework_run_state)
    assert [r.body["model"] for r in model.requests] == ["gpt-test", "gpt-other"]
    assert sent(model, 0)[0] == ("system", "Default prompt.")
    assert sent(model, 1)[0] == ("system", "Answer in French.")


@dataclass
class Preferences:
    model: str = "gpt-test"


async def test_settings_become_the_agents_context_schema_or_a_clear_turn_error(
    model: ScriptedModelServer,
) -> None:
    seen: list[Any] = []

    @dynamic_prompt
    def prompt(request: ModelRequest[Preferences]) -> str:
        seen.append(request.runtime.context)
        return "Be brief."

    agent = create_agent(
        chat_model(model), weather_tools(Log()), middleware=[prompt], context_schema=Preferences
    )
    run = session(LangGraphRunner(agent), settings={"model": "gpt-x"})
    model.enqueue(reply_text("Hi."))
    await run.step(run.driver.start_turn("Hi"), None)
    assert seen == [Preferences(model="gpt-x")]
    run.settings = {"colour": "blue"}
    failed = await run.step(run.driver.start_turn("Again"), None)
    assert isinstance(failed, TurnCompleted) and failed.turn_error is not None
    assert "context_schema Preferences" in failed.turn_error
    assert "context_factory" in failed.turn_error
    # A context_factory builds the context from the settings.
    factory = LangGraphRunner(agent, context_factory=lambda s: Preferences(s.get("colour", "")))
    run = session(factory, settings={"colour": "blue"})
    model.enqueue(reply_text("Hi."))
    await run.step(run.driver.start_turn("Hi"), None)
    assert seen[-1] == Preferences(model="blue")


async def test_a_tool_reads_the_settings_as_its_runtime_context(
    model: ScriptedModelServer,
) -> None:
    @tool
    def whoami(runtime: ToolRuntime[dict[str, Any]]) -> str:
        """Says which model the session uses."""
        return f"model {runtime.context['model']}"

    run = session(LangGraphRunner(create_agent(chat_model(model), [whoami])))
    run.settings = {"model": "gpt-other"}
    model.enqueue(reply_tools(("c1", "whoami", {})))
    turn = run.driver.start_turn("Which model?")
    requested = await run.step(turn, None)
    record = run.driver.approved_record(turn, requested.tool_calls[0])
    execution = replace(run.driver.execution(record), turn=run.context(turn, run.driver.run_state))
    result = await run.driver.runner.execute_deferred_tool_call(execution)
    assert result.output == "model gpt-other"


async def test_a_graph_with_its_own_model_node_has_no_built_ins_nor_plan_mode(
    model: ScriptedModelServer,
) -> None:
    tools = weather_tools(Log())
    llm = chat_model(model).bind_tools(tools)

    async def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await llm.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    runner = LangGraphRunner(graph.compile(), framework_retries=True)
    assert runner.supports_plan_mode is False
    run = session(runner)
    outcome = await run.step(run.driver.start_turn("Hi"), None)
    assert isinstance(outcome, TurnCompleted)
    assert outcome.turn_error is not None and "built_in_tools" in outcome.turn_error
    assert model.requests == []
    with pytest.raises(UnsupportedGraphError, match="create_agent"):
        LangGraphRunner(graph.compile(), framework_retries=True, tool_sources=[McpToolSource([])])
