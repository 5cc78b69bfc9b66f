"""What the session offers, through the runner alone: built-in tools, plan mode, session
settings and compaction, with the real SDK and its OpenAI client against the scripted server.
(The shared feature matrix runs the same through real Workers: test_features.py.)"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from agents import Agent, FunctionTool, RunConfig, RunContextWrapper, function_tool
from dex_agents import texts
from dex_agents.builtins import (
    BUILT_IN_TOOL_DEFINITIONS,
    PLANNING_TURN_REJECTION,
    build_plan_note,
)
from dex_agents.runner import (
    AgentTurnContext,
    ContextCompactionRunner,
    ContextSummaryRequest,
    DeferredToolCall,
    PlanModeRunner,
    ToolCallsRequested,
    ToolPolicy,
    TurnCompleted,
)
from dex_agents.testing import RunnerDriver
from dex_agents.testing.driver import RecordingEvents
from dex_agents.testing.model_server import ScriptedModelServer, reply_text, reply_tools
from dex_agents.types import AgentPlan, AgentPlanTask, AgentToolCall, ContextSummary

from dex_agents_openai_agents import OpenAIAgentsRunner, RunContextRequest
from dex_agents_openai_agents.compaction import (
    approximate_tokens,
    summary_input,
    summary_input_item,
)

MODEL = "gpt-test"
ALL_BUILT_INS = ("ask_user", "durable_wait", "write_todos")
BUILT_IN = ToolPolicy(effect="read", requires_approval=False)


@dataclass
class SessionDriver(RunnerDriver):
    """RunnerDriver whose model Steps see the session's built-ins, settings, mode, plan and
    summary, as a Worker's RunModel does."""

    built_ins: tuple[str, ...] = ()
    settings: dict[str, Any] | None = None
    mode: str = "chat"
    plan: AgentPlan | None = None
    summary: ContextSummary | None = None

    def context(self, turn_id: str, run_state: str | None, records: Any = None) -> AgentTurnContext:
        context = super().context(turn_id, run_state, records)
        summarized = self.summary.last_sequence if self.summary else 0
        return replace(
            context,
            enabled_built_in_tools=self.built_ins,
            session_settings=self.settings or {},
            interaction_mode=self.mode,  # type: ignore[arg-type]
            plan=self.plan,
            context_summary=self.summary,
            messages=[m for m in context.messages if m.sequence > summarized],
        )


def tool_names(server: ScriptedModelServer, index: int) -> list[str]:
    return [tool["name"] for tool in server.requests[index].body.get("tools", [])]


def input_items(server: ScriptedModelServer, index: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = server.requests[index].body["input"]
    return items


def texts_of(items: list[dict[str, Any]]) -> list[str]:
    """Each input item's text (a message's), or its type."""
    out = []
    for item in items:
        content = item.get("content")
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content)
        out.append(content if isinstance(content, str) else str(item.get("type")))
    return out


def succeeded(
    driver: RunnerDriver, turn_id: str, call: DeferredToolCall, output: str
) -> AgentToolCall:
    """The record the session keeps once it ran a built-in call."""
    record = driver.approved_record(turn_id, call).model_copy(
        update={"status": "succeeded", "output": output}
    )
    driver.records.append(record)
    return record


def plan(status: str, *tasks: str) -> AgentPlan:
    return AgentPlan(
        revision=1,
        status=status,  # type: ignore[arg-type]
        tasks=[AgentPlanTask(content=task, status="pending") for task in tasks],
        updated_at="2026-01-01T00:00:00.000Z",
    )


def weather() -> FunctionTool:
    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    return get_weather


def own_ask_user(ran: list[str]) -> FunctionTool:
    @function_tool
    def ask_user(question: str) -> str:
        """The application's own tool of a built-in's name."""
        ran.append(question)
        return "the application's answer"

    return ask_user


# -- built-in tools --------------------------------------------------------------------------


async def test_built_ins_are_offered_deferred_with_their_policy_and_answered_from_the_record(
    server: ScriptedModelServer, run_config: RunConfig
) -> None:
    ran: list[str] = []
    agent = Agent(name="Support", tools=[weather(), own_ask_user(ran)], model=MODEL)
    runner = OpenAIAgentsRunner(agent, run_config=run_config)
    driver = SessionDriver(runner, built_ins=ALL_BUILT_INS)
    server.enqueue(
        reply_tools(("call_q", "ask_user", {"question": "Which city?"})),
        reply_text("Sunny in Paris."),
    )

    turn_id = driver.start_turn("Weather?")
    requested = await driver.model_step(turn_id, None)

    # The built-in wins over the agent's own tool of its name, which is not offered.
    assert tool_names(server, 0) == ["get_weather", *ALL_BUILT_INS]
    offered = {tool["name"]: tool for tool in server.requests[0].body["tools"]}
    definition = BUILT_IN_TOOL_DEFINITIONS["ask_user"]["function"]
    assert offered["ask_user"]["parameters"] == definition["parameters"]
    assert offered["ask_user"]["description"] == definition["description"]
    assert isinstance(requested, ToolCallsRequested)
    [call] = requested.tool_calls
    assert (call.tool_call_id, call.tool_name, call.policy) == ("call_q", "ask_user", BUILT_IN)
    assert call.tool_source_reference is None
    assert ran == []

    record = succeeded(driver, turn_id, call, "The user answered: Paris")
    completed = await driver.model_step(turn_id, requested.framework_run_state, [record])

    assert isinstance(completed, TurnCompleted) and completed.turn_error is None
    [output] = [i for i in input_items(server, 1) if i.get("type") == "function_call_output"]
    assert (output["call_id"], output["output"]) == ("call_q", "The user answered: Paris")
    assert ran == []  # the framework never ran a tool named ask_user


async def test_without_enabled_built_ins_the_agent_keeps_its_own_tool_of_that_name(
    server: ScriptedModelServer, run_config: RunConfig
) -> None:
    agent = Agent(name="Support", tools=[own_ask_user([])], model=MODEL)
    driver = SessionDriver(
        OpenAIAgentsRunner(agent, run_config=run_config),
        tool_policies={"ask_user": ToolPolicy(effect="read")},
        built_ins=("durable_wait",),
    )
    server.enqueue(reply_tools(("call_1", "ask_user", {"question": "Which city?"})))

    requested = await driver.model_step(driver.start_turn("Weather?"), None)

    assert tool_names(server, 0) == ["ask_user", "durable_wait"]
    assert isinstance(requested, ToolCallsRequested)
    [call] = requested.tool_calls
    assert json.loads(call.tool_source_reference or "") == {"agent": "Support"}


async def test_a_handoff_target_is_offered_the_built_ins_too(
    server: ScriptedModelServer, run_config: RunConfig
) -> None:
    billing = Agent(name="Billing", tools=[weather()], model=MODEL)
    agent = Agent(name="Support", handoffs=[billing], model=MODEL)
    driver = SessionDriver(
        OpenAIAgentsRunner(agent, run_config=run_config), built_ins=("durable_wait",)
    )
    server.enqueue(
        reply_tools(("call_h", "transfer_to_billing", {})),
        reply_tools(("call_w", "durable_wait", {"seconds": 5, "reason": "the bank"})),
    )

    requested = await driver.model_step(driver.start_turn("Refund me."), None)

    assert tool_names(server, 1) == ["get_weather", "durable_wait"]
    assert isinstance(requested, ToolCallsRequested)
    [call] = requested.tool_calls
    assert (call.tool_name, call.policy) == ("durable_wait", BUILT_IN)


# -- plan mode -------------------------------------------------------------------------------


async def test_a_planning_turn_offers_only_write_todos_with_the_note_before_the_turn(
    server: ScriptedModelServer, run_config: RunConfig
) -> None:
    billing = Agent(name="Billing", model=MODEL)
    agent = Agent(name="Support", tools=[weather()], handoffs=[billing], model=MODEL)
    runner = OpenAIAgentsRunner(agent, run_config=run_config)
    assert isinstance(runner, PlanModeRunner) and runner.supports_plan_mode
    driver = SessionDriver(runner, built_ins=ALL_BUILT_INS)
    todos = {"todos": [{"content": "Check Paris", "status": "pending"}]}
    server.enqueue(
        reply_text("Hello."),
        reply_tools(("call_p", "write_todos", todos)),
        reply_text("Here is the plan."),
    )
    await driver.turn("Hi.")
    assert "write_todos" in tool_names(server, 0)

    driver.mode = "planning"
    turn_id = driver.start_turn("Plan the trip.")
    requested = await driver.model_step(turn_id, None)

    assert tool_names(server, 1) == ["write_todos"]
    note = build_plan_note(None, "planning")
    assert texts_of(input_items(server, 1)) == ["Hi.", "Hello.", note, "Plan the trip."]
    assert isinstance(requested, ToolCallsRequested)
    [call] = requested.tool_calls
    assert (call.tool_name, call.policy) == ("write_todos", BUILT_IN)

    # The next call of the turn sees the plan the call drafted, where the note was.
    driver.plan = plan("draft", "Check Paris")
    record = succeeded(driver, turn_id, call, "The plan is saved.")
    completed = await driver.model_step(turn_id, requested.framework_run_state, [record])

    assert isinstance(completed, TurnCompleted) and completed.turn_error is None
    assert tool_names(server, 2) == ["write_todos"]
    second = texts_of(input_items(server, 2))
    assert second[:4] == [
        "Hi.",
        "Hello.",
        build_plan_note(driver.plan, "planning"),
        "Plan the trip.",
    ]
    # The note is never stored: the turn stores the model's items only.
    assert [m.text for m in completed.new_messages] == [None, None, "Here is the plan."]


async def test_a_planning_turn_answers_a_call_of_another_tool_with_the_rejection(
    server: ScriptedModelServer, run_config: RunConfig
) -> None:
    ran: list[str] = []
    agent = Agent(name="Support", tools=[own_ask_user(ran)], model=MODEL)
    driver = SessionDriver(
        OpenAIAgentsRunner(agent, run_config=run_config),
        built_ins=("write_todos",),
        mode="planning",
    )
    todos = {"todos": [{"content": "Ask", "status": "pending"}]}
    server.enqueue(
        reply_tools(("call_a", "ask_user", {"question": "Now?"})),
        reply_tools(("call_p", "write_todos", todos)),
    )

    requested = await driver.model_step(driver.start_turn("Plan."), None)

    assert isinstance(requested, ToolCallsRequested)
    assert [call.tool_name for call in requested.tool_calls] == ["write_todos"]
    outputs = [i for i in input_items(server, 1) if i.get("type") == "function_call_output"]
    assert [(o["call_id"], o["output"]) for o in outputs] == [("call_a", PLANNING_TURN_REJECTION)]
    assert ran == []


async def test_a_chat_turn_with_an_active_plan_sees_it_and_every_tool(
    server: ScriptedModelServer, run_config: RunConfig
) -> None:
    agent = Agent(name="Support", tools=[weather()], model=MODEL)
    driver = SessionDriver(
        OpenAIAgentsRunner(agent, run_config=run_config),
        built_ins=ALL_BUILT_INS,
        plan=plan("active", "Check Paris"),
    )
    server.enqueue(reply_text("On it."))

    await driver.turn("Go.")

    assert tool_names(server, 0) == ["get_weather", *ALL_BUILT_INS]
    assert texts_of(input_items(server, 0)) == [build_plan_note(driver.plan, "chat"), "Go."]


# -- session settings ------------------------------------------------------------------------


async def test_session_settings_choose_the_model_and_the_instructions(
    server: ScriptedModelServer, run_config: RunConfig
) -> None:
    def instructions(ctx: RunContextWrapper[dict[str, Any]], agent: Agent[Any]) -> str:
        return str(ctx.context.get("instructions", "Default instructions."))

    def context(request: RunContextRequest) -> dict[str, Any]:
        return dict(request.session_settings)

    agent = Agent(name="Support", instructions=instructions, tools=[weather()], model=MODEL)
    runner = OpenAIAgentsRunner(
        agent,
        run_config=run_config,
        context_factory=context,
        resolve_model=lambda settings: settings.get("model"),
    )
    driver = SessionDriver(runner, tool_policies={"get_weather": ToolPolicy(effect="read")})
    server.enqueue(
        reply_text("One."),
        reply_tools(("call_1", "get_weather", {"city": "Paris"})),
        reply_text("Two."),
    )

    first = await driver.turn("First.")
    assert (server.requests[0].body["model"], server.requests[0].body["instructions"]) == (
        MODEL,
        "Default instructions.",
    )
    assert first.final.model_call_metadata is not None
    assert first.final.model_call_metadata.request_model == MODEL

    # Changed mid-session, between a turn's model calls: the next call uses them.
    turn_id = driver.start_turn("Second.")
    requested = await driver.model_step(turn_id, None)
    assert isinstance(requested, ToolCallsRequested)
    records = await driver.run_tools(turn_id, requested)
    driver.settings = {"model": "gpt-other", "instructions": "Speak French."}
    completed = await driver.model_step(turn_id, requested.framework_run_state, records)

    assert isinstance(completed, TurnCompleted)
    assert (server.requests[2].body["model"], server.requests[2].body["instructions"]) == (
        "gpt-other",
        "Speak French.",
    )
    assert completed.model_call_metadata is not None
    assert completed.model_call_metadata.request_model == "gpt-other"


# -- compaction ------------------------------------------------------------------------------


def compaction_runner(run_config: RunConfig) -> OpenAIAgentsRunner:
    agent = Agent(name="Support", instructions="Help.", tools=[weather()], model=MODEL)
    runner = OpenAIAgentsRunner(
        agent, run_config=run_config, resolve_model=lambda settings: settings.get("model")
    )
    assert isinstance(runner, ContextCompactionRunner)
    return runner


async def three_turns(driver: SessionDriver, server: ScriptedModelServer) -> None:
    """A chat turn, a turn with a tool call, and a chat turn: 7 stored messages."""
    server.enqueue(
        reply_text("Hello there."),
        reply_tools(("call_1", "get_weather", {"city": "Paris"})),
        reply_text("It is sunny in Paris."),
        reply_text("Bye."),
    )
    await driver.turn("Hi.")
    await driver.turn("Weather in Paris?")
    await driver.turn("Thanks.")


async def test_compaction_cuts_only_between_a_call_and_after_its_output(
    server: ScriptedModelServer, run_config: RunConfig
) -> None:
    runner = compaction_runner(run_config)
    driver = SessionDriver(runner, tool_policies={"get_weather": ToolPolicy(effect="read")})
    await three_turns(driver, server)
    roles = [(m.sequence, m.role, m.tool_name) for m in driver.messages]
    assert roles == [
        (1, "user", None),
        (2, "assistant", None),
        (3, "user", None),
        (4, "assistant", "get_weather"),
        (5, "tool", "get_weather"),
        (6, "assistant", None),
        (7, "user", None),
        (8, "assistant", None),
    ]
    turn_id = driver.start_turn("Again?")
    turn = driver.context(turn_id, None)

    estimate = runner.estimate_input_tokens(turn)
    assert estimate > sum(len(m.framework_item) for m in driver.messages) // 4
    # Nothing retained fits: the latest cut, before the newest turn's message.
    assert runner.select_compaction_cutoff(turn, 0) == 8
    # Everything fits after the first cut.
    assert runner.select_compaction_cutoff(turn, 10_000) == 1
    # A cut never falls between the call (4) and its output (5).
    sizes = [approximate_tokens(json.loads(m.framework_item)) for m in driver.messages]
    after_output = sum(sizes[5:])
    assert runner.select_compaction_cutoff(turn, after_output) == 5
    assert runner.select_compaction_cutoff(turn, after_output + sizes[4]) == 5
    assert runner.select_compaction_cutoff(turn, after_output + sizes[4] + sizes[3]) == 3
    assert runner.select_compaction_cutoff(turn, after_output - 1) == 6


async def test_summarize_is_one_model_call_and_the_summary_comes_first(
    server: ScriptedModelServer, run_config: RunConfig
) -> None:
    runner = compaction_runner(run_config)
    driver = SessionDriver(runner, tool_policies={"get_weather": ToolPolicy(effect="read")})
    await three_turns(driver, server)
    before = len(server.requests)
    server.enqueue(reply_text("  They talked about the weather in Paris.  "))

    result = await runner.summarize_context(
        ContextSummaryRequest(
            flow_id="session-1",
            turn_id="turn-4",
            attempt=1,
            previous_summary=None,
            messages=driver.messages[:5],
            through_sequence=5,
            events=RecordingEvents(),
            heartbeat=lambda: None,
            input_token_budget=10_000,
            session_settings={"model": "gpt-summary"},
        )
    )

    assert len(server.requests) == before + 1
    request = server.requests[before].body
    assert request["model"] == "gpt-summary"
    assert "tools" not in request or not request["tools"]
    [prompt] = texts_of(request["input"])
    assert prompt.split("\n\n") == [
        "User: Hi.",
        "Assistant: Hello there.",
        "User: Weather in Paris?",
        'Assistant called get_weather with {"city": "Paris"}',
        "Tool result (get_weather): sunny in Paris",
        texts.CONTEXT_SUMMARY_INSTRUCTION,
    ]
    assert result.text == "They talked about the weather in Paris."
    assert result.usage is not None and result.usage.model_calls == 1

    # The next model call starts with the summary, then the messages after it.
    driver.summary = ContextSummary(
        generation=1, last_sequence=5, text=result.text, created_at="2026-01-01T00:00:00Z"
    )
    server.enqueue(reply_text("Still sunny."))
    await driver.turn("And now?")
    items = input_items(server, before + 1)
    assert texts_of(items) == [
        f"{texts.CONTEXT_SUMMARY_PREFIX}\n{result.text}",
        "It is sunny in Paris.",
        "Thanks.",
        "Bye.",
        "And now?",
    ]


async def test_a_compaction_while_tool_calls_wait_resumes_the_turn_without_the_summarized(
    server: ScriptedModelServer, run_config: RunConfig
) -> None:
    runner = compaction_runner(run_config)
    driver = SessionDriver(runner, tool_policies={"get_weather": ToolPolicy(effect="read")})
    await three_turns(driver, server)
    server.enqueue(
        reply_tools(("call_2", "get_weather", {"city": "Rome"})), reply_text("Sunny in Rome.")
    )
    turn_id = driver.start_turn("And Rome?")
    requested = await driver.model_step(turn_id, None)
    assert isinstance(requested, ToolCallsRequested)
    records = await driver.run_tools(turn_id, requested)

    # The session summarized messages 1-5 before the turn's next model call.
    driver.summary = ContextSummary(
        generation=1, last_sequence=5, text="Paris was sunny.", created_at="2026-01-01T00:00:00Z"
    )
    completed = await driver.model_step(turn_id, requested.framework_run_state, records)

    assert isinstance(completed, TurnCompleted) and completed.turn_error is None
    items = input_items(server, len(server.requests) - 1)
    assert texts_of(items) == [
        f"{texts.CONTEXT_SUMMARY_PREFIX}\nParis was sunny.",
        "It is sunny in Paris.",
        "Thanks.",
        "Bye.",
        "And Rome?",
        "function_call",
        "function_call_output",
    ]
    # The turn stores its own items only, the summary and the older history left out.
    assert [(m.role, m.tool_name) for m in completed.new_messages] == [
        ("assistant", "get_weather"),
        ("tool", "get_weather"),
        ("assistant", None),
    ]


async def test_a_summary_request_over_budget_leaves_out_the_oldest_up_to_a_cut(
    server: ScriptedModelServer, run_config: RunConfig
) -> None:
    driver = SessionDriver(
        compaction_runner(run_config), tool_policies={"get_weather": ToolPolicy(effect="read")}
    )
    await three_turns(driver, server)
    previous = ContextSummary(
        generation=1, last_sequence=0, text="Earlier: hello.", created_at="2026-01-01T00:00:00Z"
    )
    lines = [
        "User: Hi.",
        "Assistant: Hello there.",
        "User: Weather in Paris?",
        'Assistant called get_weather with {"city": "Paris"}',
        "Tool result (get_weather): sunny in Paris",
        "Assistant: It is sunny in Paris.",
    ]
    fixed = approximate_tokens([summary_input_item(previous)]) + approximate_tokens(
        texts.CONTEXT_SUMMARY_INSTRUCTION
    )
    # Room for the last message and the note only: the call and its output go together.
    budget = (
        fixed + approximate_tokens(lines[5]) + approximate_tokens(texts.context_left_out_note(6))
    )
    request = ContextSummaryRequest(
        flow_id="session-1",
        turn_id="turn-4",
        attempt=1,
        previous_summary=previous,
        messages=driver.messages[:6],
        through_sequence=6,
        events=RecordingEvents(),
        heartbeat=lambda: None,
        input_token_budget=budget,
    )

    head, body = summary_input(request, None)

    assert head == summary_input_item(previous)
    assert body["content"].split("\n\n") == [
        texts.context_left_out_note(5),
        lines[5],
        texts.CONTEXT_SUMMARY_INSTRUCTION,
    ]
    roomier = replace(request, input_token_budget=budget + approximate_tokens(lines[4]))
    # One more line's room is not enough for the output without its call.
    assert summary_input(roomier, None)[1] == body
