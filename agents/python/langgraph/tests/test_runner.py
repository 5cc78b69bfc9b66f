"""Runner-level tests: a real `create_agent` graph and the real ChatOpenAI client against the
scripted Chat Completions server, driven in memory as the session Flow drives a runner."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, NotRequired

import pytest
from dex_agents.policy import InvalidToolEffectError
from dex_agents.runner import ToolCallsRequested, ToolPolicy, TurnCompleted
from dex_agents.testing import RunnerDriver, ScriptedModelServer
from dex_agents.testing.driver import Reject
from dex_agents.testing.model_server import reply_text, reply_tools
from langchain.agents import AgentState, create_agent
from langchain.agents.middleware import AgentMiddleware, HumanInTheLoopMiddleware
from langchain.agents.structured_output import ProviderStrategy
from langchain_core.tools import BaseTool, tool
from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import BaseModel

from dex_agents_langgraph import LangGraphRunner, UnsupportedGraphError, current_tool_execution


class Log:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []


def weather_tools(log: Log) -> list[BaseTool]:
    @tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        log.calls.append(("get_weather", city, current_tool_execution().idempotency_key))
        return f"sunny in {city}"

    @tool
    def send_email(to: str) -> str:
        """Sends an email."""
        log.calls.append(("send_email", to, current_tool_execution().idempotency_key))
        return f"sent to {to}"

    send_email.metadata = {"effect": "non_idempotent_write"}
    return [get_weather, send_email]


def chat_model(server: ScriptedModelServer) -> ChatOpenAI:
    return ChatOpenAI(
        model="gpt-test",
        base_url=server.base_url,
        api_key="test",
        max_retries=0,
        streaming=True,
        stream_usage=True,
    )


@pytest.fixture
def log() -> Log:
    return Log()


@pytest.fixture
def driver(model: ScriptedModelServer, log: Log) -> RunnerDriver:
    agent = create_agent(chat_model(model), weather_tools(log), system_prompt="Be brief.")
    return RunnerDriver(LangGraphRunner(agent), default_tool_effect="read")


async def test_a_text_answer_is_one_model_call_streamed(
    driver: RunnerDriver, model: ScriptedModelServer
) -> None:
    model.enqueue(reply_text("Hello there."))
    result = await driver.turn("Hi")
    assert [m.text for m in result.new_messages] == ["Hello there."]
    assert driver.events.texts() == "Hello there."
    assert result.final.usage is not None and result.final.usage.model_calls == 1
    assert result.final.usage.input_tokens == 10
    assert len(model.requests) == 1
    sent = model.requests[0].body["messages"]
    assert sent[0] == {"role": "system", "content": "Be brief."}


async def test_parallel_tool_calls_run_in_their_own_steps_once(
    driver: RunnerDriver, model: ScriptedModelServer, log: Log
) -> None:
    model.enqueue(
        reply_tools(
            ("c1", "get_weather", {"city": "Paris"}), ("c2", "get_weather", {"city": "Oslo"})
        )
    )
    model.enqueue(reply_text("Sunny in both."))
    result = await driver.turn("Weather?")
    requested = result.outcomes[0]
    assert isinstance(requested, ToolCallsRequested)
    assert [c.tool_call_id for c in requested.tool_calls] == ["c1", "c2"]
    assert [(name, city) for name, city, _ in log.calls] == [
        ("get_weather", "Paris"),
        ("get_weather", "Oslo"),
    ]
    assert log.calls[0][2] != log.calls[1][2]
    assert len(model.requests) == 2
    tool_results = {
        m["tool_call_id"]: m["content"]
        for m in model.requests[1].body["messages"]
        if m["role"] == "tool"
    }
    assert tool_results == {"c1": "sunny in Paris", "c2": "sunny in Oslo"}
    roles = [m.role for m in result.new_messages]
    assert roles == ["assistant", "tool", "tool", "assistant"]
    assert result.new_messages[-1].text == "Sunny in both."


async def test_the_effect_comes_from_tool_metadata_and_a_policy_overrides_it(
    model: ScriptedModelServer, log: Log
) -> None:
    agent = create_agent(chat_model(model), weather_tools(log))
    driver = RunnerDriver(
        LangGraphRunner(agent), tool_policies={"get_weather": ToolPolicy(effect="idempotent_write")}
    )
    model.enqueue(
        reply_tools(("c1", "send_email", {"to": "ana"}), ("c2", "get_weather", {"city": "Rome"}))
    )
    model.enqueue(reply_text("Done."))
    result = await driver.turn("Go")
    assert {r.tool_name: r.effect for r in result.records} == {
        "send_email": "non_idempotent_write",
        "get_weather": "idempotent_write",
    }


@pytest.mark.parametrize(
    ("declared", "effect"),
    [({"metadata": {"effect": "reed"}}, "'reed'"), ({"tags": ["effect:Read"]}, "'Read'")],
)
def test_an_effect_that_is_not_one_is_refused_when_the_runner_is_built(
    model: ScriptedModelServer, log: Log, declared: dict[str, Any], effect: str
) -> None:
    tools = weather_tools(log)
    for name, value in declared.items():
        setattr(tools[0], name, value)
    with pytest.raises(
        InvalidToolEffectError, match=f"tool 'get_weather' declares effect {effect}"
    ):
        LangGraphRunner(create_agent(chat_model(model), tools))


async def test_a_rejected_call_never_runs_and_the_model_reads_the_rejection(
    driver: RunnerDriver, model: ScriptedModelServer, log: Log
) -> None:
    model.enqueue(reply_tools(("c1", "send_email", {"to": "ana"})))
    model.enqueue(reply_text("Not sent."))
    await driver.turn("Email Ana", decide=lambda record: Reject("Not today."))
    assert log.calls == []
    tool_messages = [m for m in model.requests[1].body["messages"] if m["role"] == "tool"]
    assert "Not today." in tool_messages[0]["content"]


async def test_the_next_turn_replays_the_stored_conversation(
    driver: RunnerDriver, model: ScriptedModelServer
) -> None:
    model.enqueue(reply_tools(("c1", "get_weather", {"city": "Paris"})))
    model.enqueue(reply_text("Sunny."))
    await driver.turn("Weather?")
    model.enqueue(reply_text("You asked about Paris."))
    await driver.turn("What did I ask?")
    sent = [(m["role"], m.get("content")) for m in model.requests[2].body["messages"]]
    assert sent[1:] == [
        ("user", "Weather?"),
        ("assistant", None),
        ("tool", "sunny in Paris"),
        ("assistant", "Sunny."),
        ("user", "What did I ask?"),
    ]


async def test_unfinished_turn_answers_every_call(
    driver: RunnerDriver, model: ScriptedModelServer
) -> None:
    model.enqueue(reply_tools(("c1", "get_weather", {"city": "Paris"})))
    turn_id = driver.start_turn("Weather?")
    outcome = await driver.model_step(turn_id, None)
    assert isinstance(outcome, ToolCallsRequested)
    context = driver.context(turn_id, outcome.framework_run_state)
    messages = await driver.runner.build_unfinished_turn_messages(context)  # type: ignore[attr-defined]
    assert [(m.role, m.tool_call_id) for m in messages] == [("assistant", "c1"), ("tool", "c1")]
    assert messages[1].tool_output is not None and messages[1].tool_output != ""


class CountingMiddleware(AgentMiddleware[Any, Any]):
    def __init__(self) -> None:
        super().__init__()
        self.wrapped: list[str] = []

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        self.wrapped.append(request.tool_call["id"])
        return await handler(request)


async def test_the_applications_tool_middleware_still_wraps_each_call(
    model: ScriptedModelServer, log: Log
) -> None:
    middleware = CountingMiddleware()
    agent = create_agent(chat_model(model), weather_tools(log), middleware=[middleware])
    driver = RunnerDriver(LangGraphRunner(agent), default_tool_effect="read")
    model.enqueue(reply_tools(("c1", "get_weather", {"city": "Paris"})))
    model.enqueue(reply_text("Sunny."))
    result = await driver.turn("Weather?")
    assert result.new_messages[-1].text == "Sunny."
    assert "c1" in middleware.wrapped
    assert len(log.calls) == 1


def test_a_graph_without_a_tool_node_is_refused() -> None:
    graph: StateGraph[dict[str, Any]] = StateGraph(dict)
    graph.add_node("model", lambda state: state)
    graph.set_entry_point("model")
    with pytest.raises(UnsupportedGraphError, match="create_agent"):
        LangGraphRunner(graph.compile())


async def test_turn_completed_has_no_tool_calls_left(
    driver: RunnerDriver, model: ScriptedModelServer
) -> None:
    model.enqueue(reply_text("Fine."))
    result = await driver.turn("Hi")
    assert isinstance(result.final, TurnCompleted)


async def test_the_stored_run_state_does_not_grow_with_the_session(
    driver: RunnerDriver, model: ScriptedModelServer
) -> None:
    sizes: list[int] = []
    for turn in range(10):
        model.enqueue(reply_tools((f"c{turn}", "get_weather", {"city": "Paris" * 40})))
        model.enqueue(reply_text("Sunny, " + "very " * 60 + "sunny."))
        result = await driver.turn(f"Weather, question {turn:02d}? " + "please " * 40)
        requested = result.outcomes[0]
        assert isinstance(requested, ToolCallsRequested)
        sizes.append(len(requested.framework_run_state))
    # Ten turns of ~1 KB each are in the history; the run state stays the size of one turn.
    assert max(sizes) - min(sizes) < 64, sizes
    assert len(driver.messages) == 40


class Triage(BaseModel):
    category: str


async def test_response_format_as_a_tool_strategy_ends_the_turn_without_a_tool_step(
    model: ScriptedModelServer, log: Log
) -> None:
    agent = create_agent(chat_model(model), weather_tools(log), response_format=Triage)
    driver = RunnerDriver(LangGraphRunner(agent), default_tool_effect="read")
    model.enqueue(reply_tools(("c1", "get_weather", {"city": "Paris"})))
    model.enqueue(reply_tools(("s1", "Triage", {"category": "billing"})))
    result = await driver.turn("My invoice is wrong.")
    assert [r.tool_name for r in result.records] == ["get_weather"]
    assert len(log.calls) == 1
    final = result.new_messages[-2:]
    assert [(m.role, m.tool_name) for m in final] == [("assistant", "Triage"), ("tool", "Triage")]
    assert "billing" in (final[1].tool_output or "")
    names = [t["function"]["name"] for t in model.requests[1].body["tools"]]
    assert "Triage" in names


def test_human_in_the_loop_middleware_is_refused(model: ScriptedModelServer, log: Log) -> None:
    agent = create_agent(
        chat_model(model),
        weather_tools(log),
        middleware=[HumanInTheLoopMiddleware(interrupt_on={"send_email": True})],
    )
    with pytest.raises(UnsupportedGraphError, match="requires_approval=True"):
        LangGraphRunner(agent)


async def test_cancelling_the_model_step_stops_the_streaming_request(
    driver: RunnerDriver, model: ScriptedModelServer
) -> None:
    model.enqueue(reply_text("Never seen.", hang=True))
    turn_id = driver.start_turn("Hi")
    step = asyncio.create_task(driver.model_step(turn_id, None))
    while not model.requests:
        await asyncio.sleep(0.02)
    step.cancel()
    with pytest.raises(asyncio.CancelledError):
        await step
    deadline = asyncio.get_running_loop().time() + 10
    while model.dropped < 1 and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)
    assert model.dropped == 1
    assert driver.events.texts() == ""


async def test_a_plain_state_graph_with_a_tool_node_runs_its_calls_one_after_another(
    model: ScriptedModelServer, log: Log
) -> None:
    tools = weather_tools(log)
    llm = chat_model(model).bind_tools(tools)

    async def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await llm.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    # Its own node calls the model, whose retries the runner cannot reach: the application
    # turns them off (max_retries=0 above) and says so.
    with pytest.raises(UnsupportedGraphError, match="framework_retries=True"):
        LangGraphRunner(graph.compile())
    runner = LangGraphRunner(graph.compile(), framework_retries=True)
    driver = RunnerDriver(runner, default_tool_effect="read")
    model.enqueue(
        reply_tools(
            ("c1", "get_weather", {"city": "Paris"}), ("c2", "get_weather", {"city": "Oslo"})
        ),
        reply_text("Done."),
    )
    result = await driver.turn("Weather?")
    # One task runs both calls, so its interrupts come one per model Step; the second model
    # Step makes no model call.
    assert [len(getattr(o, "tool_calls", ())) for o in result.outcomes] == [1, 1, 0]
    assert [(o.usage.model_calls if o.usage else 0) for o in result.outcomes] == [1, 0, 1]
    assert driver.usage.model_calls == 2 and len(model.requests) == 2
    assert [city for _, city, _ in log.calls] == ["Paris", "Oslo"]
    assert result.new_messages[-1].text == "Done."


class Word(BaseModel):
    word: str


class TopicState(AgentState[Any]):
    topics: NotRequired[Annotated[list[str], operator.add]]
    turns: NotRequired[int]


class TopicNoter(AgentMiddleware[TopicState, Any]):
    """Adds each turn's question to its `topics` key (an `operator.add` reducer) and counts
    the turns in `turns` (a plain value); records what each turn started from."""

    state_schema = TopicState

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[list[str], int | None, Any]] = []

    def before_agent(self, state: TopicState, runtime: Any) -> dict[str, Any]:
        started = (list(state.get("topics", [])), state.get("turns"))
        self.seen.append((*started, state.get("structured_response")))
        question = state["messages"][-1].text
        return {"topics": [question], "turns": state.get("turns", 0) + 1}


async def test_the_graphs_state_carries_over_to_the_next_turn_through_its_reducers(
    model: ScriptedModelServer,
) -> None:
    noter = TopicNoter()
    agent = create_agent(
        chat_model(model),
        weather_tools(Log()),
        middleware=[noter],
        response_format=ProviderStrategy(Word),
    )
    driver = RunnerDriver(LangGraphRunner(agent), default_tool_effect="read")
    answers = [Word(word=w).model_dump_json() for w in ("one", "two", "three")]
    model.enqueue(*(reply_text(a) for a in answers))
    for question in ("alpha", "bravo", "charlie"):
        await driver.turn(question)

    # Each turn starts from the state the previous one ended with, as a LangGraph thread
    # does: the list grows by its reducer (no copy doubled), the plain value goes on, and
    # the last structured response is there until the model node writes the next one.
    assert noter.seen == [
        ([], None, None),
        (["alpha"], 1, Word(word="one")),
        (["alpha", "bravo"], 2, Word(word="two")),
    ]
    # The model sees the conversation alone: the carried state is not a message.
    sent = [m["content"] for m in model.requests[2].body["messages"]]
    assert sent == ["alpha", answers[0], "bravo", answers[1], "charlie"]
