"""Compaction at the runner: a summary that arrives between the Steps of a turn replaces the
conversation the turn's checkpoint started from, and cuts never fall inside the active turn
(a Worker compacts a session in tests/test_worker_features.py)."""

from __future__ import annotations

from dataclasses import replace

from dex_agents.runner import ContextSummaryRequest, ToolCallsRequested, TurnCompleted
from dex_agents.testing import RunnerDriver, ScriptedModelServer
from dex_agents.testing.model_server import reply_text, reply_tools
from dex_agents.texts import (
    CONTEXT_SUMMARY_INSTRUCTION,
    context_left_out_note,
)
from dex_agents.texts import (
    CONTEXT_SUMMARY_PREFIX as SUMMARY_PREFIX,
)
from dex_agents.types import ContextSummary
from langchain.agents import create_agent

from dex_agents_langgraph import LangGraphRunner

from .test_runner import Log, chat_model, weather_tools

SUMMARY = ContextSummary(
    generation=1, last_sequence=2, text="They said hello.", created_at="2026-01-01T00:00:00Z"
)


def session(model: ScriptedModelServer) -> RunnerDriver:
    agent = create_agent(chat_model(model), weather_tools(Log()), system_prompt="Be brief.")
    return RunnerDriver(LangGraphRunner(agent), default_tool_effect="read")


async def test_a_summary_between_the_steps_of_a_turn_replaces_its_start(
    model: ScriptedModelServer,
) -> None:
    driver = session(model)
    model.enqueue(reply_text("Hello."), reply_text("Fine."))
    await driver.turn("Hi")
    await driver.turn("How are you?")
    model.enqueue(reply_tools(("c1", "get_weather", {"city": "Oslo"})), reply_text("Sunny."))
    turn_id = driver.start_turn("Weather?")
    requested = await driver.model_step(turn_id, None)
    assert isinstance(requested, ToolCallsRequested)
    await driver.run_tools(turn_id, requested)
    # CompactContext ran before the resuming RunModel: messages 1-2 are now the summary.
    context = replace(
        driver.context(turn_id, requested.framework_run_state),
        messages=driver.messages[2:],
        context_summary=SUMMARY,
    )
    assert driver.runner.estimate_input_tokens(context) > 0  # type: ignore[attr-defined]
    outcome = await driver.runner.run_model_step(context)
    assert isinstance(outcome, TurnCompleted)
    assert [(m.role, m.text) for m in outcome.new_messages] == [
        ("assistant", None),
        ("tool", None),
        ("assistant", "Sunny."),
    ]
    sent = [(m["role"], m.get("content")) for m in model.requests[-1].body["messages"]]
    assert sent == [
        ("system", "Be brief."),
        ("user", f"{SUMMARY_PREFIX}\nThey said hello."),
        ("user", "How are you?"),
        ("assistant", "Fine."),
        ("user", "Weather?"),
        ("assistant", None),
        ("tool", "sunny in Oslo"),
    ]


async def test_cuts_fall_between_turns_before_the_active_one(model: ScriptedModelServer) -> None:
    driver = session(model)
    model.enqueue(reply_text("Hello."), reply_text("Fine."))
    await driver.turn("Hi")
    await driver.turn("How are you?")
    runner = driver.runner
    turn_id = driver.start_turn("Weather?")
    context = driver.context(turn_id, None)
    # Boundaries after message 2 (turn 1's answer) and 4 (turn 2's, before the active turn):
    # the earliest whose later messages fit, else the latest.
    assert runner.select_compaction_cutoff(context, 10_000) == 2  # type: ignore[attr-defined]
    assert runner.select_compaction_cutoff(context, 0) == 4  # type: ignore[attr-defined]
    first = driver.context("turn-1", None)
    first = replace(first, messages=driver.messages[:1], turn_id="turn-1")
    assert runner.select_compaction_cutoff(first, 0) is None  # type: ignore[attr-defined]


async def test_the_summary_leaves_out_the_oldest_turns_that_do_not_fit(
    model: ScriptedModelServer,
) -> None:
    driver = session(model)
    model.enqueue(reply_text("Hello."), reply_text("Fine."), reply_text("Bye."))
    await driver.turn("Hi " + "there " * 200)
    await driver.turn("How are you?")
    await driver.turn("Goodbye.")
    model.enqueue(reply_text("They said goodbye."))

    def request(budget: int) -> ContextSummaryRequest:
        return ContextSummaryRequest(
            flow_id="session-1",
            turn_id="turn-4",
            attempt=1,
            previous_summary=None,
            messages=driver.messages,
            through_sequence=driver.messages[-1].sequence,
            events=driver.events,
            heartbeat=lambda: None,
            input_token_budget=budget,
        )

    result = await driver.runner.summarize_context(request(200))  # type: ignore[attr-defined]
    assert result.text == "They said goodbye."
    (sent,) = model.requests[-1].body["messages"]
    # The first turn (about 300 tokens) does not fit: it is left out whole, and said so.
    assert sent["content"].split("\n\n") == [
        context_left_out_note(2),
        "User: How are you?",
        "Assistant: Fine.",
        "User: Goodbye.",
        "Assistant: Bye.",
        CONTEXT_SUMMARY_INSTRUCTION,
    ]
    model.enqueue(reply_text("All of it."))
    await driver.runner.summarize_context(request(100_000))  # type: ignore[attr-defined]
    assert model.requests[-1].body["messages"][0]["content"].startswith("User: Hi there")
