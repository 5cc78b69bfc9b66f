"""Built-in tools, plan mode and session settings in process (RunnerDriver, with the turn's
context as the session gives it) against the real Claude Code CLI and the scripted Anthropic
server: a built-in call is deferred under the built-in's own name and its recorded result
reaches the model, a planning turn offers only write_todos after the plan note, and
`options_for` picks each run's model and instructions from the session settings."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions, create_sdk_mcp_server
from dex_agents.builtins import (
    BUILT_IN_TOOL_DEFINITIONS,
    PLANNING_TURN_REJECTION,
    build_plan_note,
)
from dex_agents.runner import AgentTurnContext, ToolCallsRequested, TurnCompleted
from dex_agents.testing import (
    RunnerDriver,
    ScriptedAnthropicServer,
    ToolRunLog,
    anthropic_text,
    anthropic_tools,
)
from dex_agents.types import AgentPlan, AgentPlanTask, AgentToolCall

from dex_agents_claude_agent_sdk import ClaudeAgentRunner
from dex_agents_claude_agent_sdk.gate import WriteGate
from dex_agents_claude_agent_sdk.tools import RecordedResults
from tests.apps.harness import lookup, options
from tests.test_writes import result_text, tool_result

BUILT_INS = ("ask_user", "durable_wait", "write_todos")


@pytest.fixture(autouse=True)
def _tool_log_env(tool_log: ToolRunLog, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOL_LOG", str(tool_log.path))


def offered(body: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The tools the request shows the model (a deferred-loading placeholder is not one)."""
    return {t["name"]: t for t in body.get("tools") or [] if not t.get("defer_loading")}


def user_texts(message: Mapping[str, Any]) -> list[str]:
    """The text blocks of a user message, the CLI's own `<system-reminder>` context left out."""
    content = message["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    texts = [b["text"] for b in blocks if b.get("type") == "text"]
    return [text for text in texts if not text.startswith("<system-reminder>")]


async def step(
    driver: RunnerDriver, turn_id: str, run_state: str | None = None, **context: Any
) -> Any:
    """One model step with the turn's context as the session gives it (`context`)."""
    turn: AgentTurnContext = dataclasses.replace(driver.context(turn_id, run_state), **context)
    outcome = await driver.runner.run_model_step(turn)
    for message in outcome.new_messages:
        driver.append(turn_id, message)
    return outcome


def settled(turn_id: str, call: Any, output: str) -> AgentToolCall:
    """The record the core keeps for a built-in call once its Step has its result."""
    return AgentToolCall(
        tool_call_id=call.tool_call_id,
        turn_id=turn_id,
        tool_name=call.tool_name,
        arguments=call.arguments,
        effect="read",
        requires_approval=False,
        status="succeeded",
        deferral_order=0,
        output=output,
    )


async def test_a_built_in_call_is_deferred_under_its_own_name_and_its_result_reaches_the_model(
    anthropic_model: ScriptedAnthropicServer, tool_log: ToolRunLog
) -> None:
    question = {"question": "Which city?", "choices": ["Oslo", "Rome"]}
    anthropic_model.enqueue(
        anthropic_tools(("toolu_1", "mcp__dex__ask_user", question)),
        anthropic_text("Rome it is."),
    )
    driver = RunnerDriver(ClaudeAgentRunner(options=options(anthropic_model.base_url)))
    turn_id = driver.start_turn("Plan a trip.")
    requested = await step(driver, turn_id, enabled_built_in_tools=BUILT_INS)

    assert isinstance(requested, ToolCallsRequested)
    (call,) = requested.tool_calls
    assert (call.tool_call_id, call.tool_name, json.loads(call.arguments)) == (
        "toolu_1",
        "ask_user",
        question,
    )
    assert call.policy is not None and call.policy.effect == "read"
    tools = offered(anthropic_model.requests[0].body)
    assert set(tools) == {"mcp__t__lookup", "mcp__t__send"} | {f"mcp__dex__{n}" for n in BUILT_INS}
    schema = BUILT_IN_TOOL_DEFINITIONS["ask_user"]["function"]["parameters"]
    assert tools["mcp__dex__ask_user"]["input_schema"] == schema

    answer = '{"status":"answered","answer":"Rome"}'
    final = await step(
        driver,
        turn_id,
        requested.framework_run_state,
        tool_calls=[settled(turn_id, call, answer)],
        enabled_built_in_tools=BUILT_INS,
    )
    assert isinstance(final, TurnCompleted) and final.new_messages[-1].text == "Rome it is."
    block = tool_result(anthropic_model.requests[1].messages, "toolu_1")
    assert result_text(block) == answer and not block.get("is_error")
    assert [(m.role, m.tool_name, m.tool_output) for m in final.new_messages[:-1]] == [
        ("assistant", "ask_user", None),
        ("tool", "ask_user", answer),
    ]
    assert len(anthropic_model.requests) == 2 and tool_log.count() == 0


async def test_without_built_ins_the_session_offers_none(
    anthropic_model: ScriptedAnthropicServer,
) -> None:
    anthropic_model.enqueue(anthropic_text("Hi."))
    driver = RunnerDriver(ClaudeAgentRunner(options=options(anthropic_model.base_url)))
    await driver.turn("Hello.")
    assert set(offered(anthropic_model.requests[0].body)) == {"mcp__t__lookup", "mcp__t__send"}


async def test_a_planning_turn_offers_only_write_todos_after_the_plan_note(
    anthropic_model: ScriptedAnthropicServer,
) -> None:
    todos = [{"content": "Check the weather", "status": "pending"}]
    anthropic_model.enqueue(
        anthropic_tools(("toolu_1", "mcp__dex__write_todos", {"todos": todos})),
        anthropic_text("Here is the plan."),
        anthropic_text("Done."),
    )
    driver = RunnerDriver(ClaudeAgentRunner(options=options(anthropic_model.base_url)))
    planning = {"enabled_built_in_tools": BUILT_INS, "interaction_mode": "planning"}
    turn_id = driver.start_turn("Plan a trip.")
    requested = await step(driver, turn_id, **planning)

    assert isinstance(requested, ToolCallsRequested)
    assert [c.tool_name for c in requested.tool_calls] == ["write_todos"]
    first = anthropic_model.requests[0].body
    assert list(offered(first)) == ["mcp__dex__write_todos"]
    note = build_plan_note(None, "planning")
    assert user_texts(first["messages"][0]) == [note, "Plan a trip."]
    output = '{"status":"updated","revision":1,"task_count":1}'
    records = [settled(turn_id, requested.tool_calls[0], output)]
    run_state = requested.framework_run_state
    final = await step(driver, turn_id, run_state, tool_calls=records, **planning)
    assert isinstance(final, TurnCompleted)
    assert list(offered(anthropic_model.requests[1].body)) == ["mcp__dex__write_todos"]

    # The executing turn offers every tool again, the plan note before its text.
    task = AgentPlanTask(content="Check the weather", status="pending")
    plan = AgentPlan(revision=1, status="active", tasks=[task], updated_at="2026-01-01T00:00:00Z")
    executing = {"enabled_built_in_tools": BUILT_INS, "interaction_mode": "executing"}
    turn_id = driver.start_turn("Go.")
    await step(driver, turn_id, plan=plan, **executing)
    last = anthropic_model.requests[2].body
    assert {"mcp__t__lookup", "mcp__dex__ask_user"} <= set(offered(last))
    assert user_texts(last["messages"][-1]) == [build_plan_note(plan, "executing"), "Go."]


async def test_the_planning_hook_denies_every_call_but_write_todos() -> None:
    driver = RunnerDriver(ClaudeAgentRunner(options=options("http://127.0.0.1:9")))
    planning = {"interaction_mode": "planning", "enabled_built_in_tools": BUILT_INS}
    turn = dataclasses.replace(driver.context("turn-1", None), **planning)
    gate = WriteGate(turn, {}, RecordedResults(), ("write_todos",))
    data: Any = {"tool_name": "mcp__t__lookup", "tool_input": {"q": "x"}}
    denied = await gate.hook(data, "toolu_1", None)  # type: ignore[arg-type]
    assert denied["hookSpecificOutput"] == {  # type: ignore[typeddict-item]
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": PLANNING_TURN_REJECTION,
    }
    data = {"tool_name": "mcp__dex__write_todos", "tool_input": {"todos": []}}
    deferred = await gate.hook(data, "toolu_2", None)  # type: ignore[arg-type]
    assert deferred["hookSpecificOutput"]["permissionDecision"] == "defer"  # type: ignore[typeddict-item]
    assert [c.tool_name for c in gate.deferred] == ["write_todos"]


async def test_session_settings_choose_the_model_and_instructions_of_the_next_run(
    anthropic_model: ScriptedAnthropicServer,
) -> None:
    def options_for(given: ClaudeAgentOptions, settings: Mapping[str, Any]) -> ClaudeAgentOptions:
        return dataclasses.replace(
            given,
            model=settings.get("model", "scripted-model"),
            system_prompt=settings.get("instructions") or "You help.",
        )

    anthropic_model.enqueue(anthropic_text("Hello."), anthropic_text("Fine."))
    runner = ClaudeAgentRunner(options=options(anthropic_model.base_url), options_for=options_for)
    driver = RunnerDriver(runner)
    await step(driver, driver.start_turn("Hi"))
    settings = {"model": "scripted-model-large", "instructions": "Answer in one word."}
    await step(driver, driver.start_turn("How are you?"), session_settings=settings)

    first, second = (request.body for request in anthropic_model.requests)
    assert (first["model"], first["system"][-1]["text"]) == ("scripted-model", "You help.")
    assert (second["model"], second["system"][-1]["text"]) == (
        "scripted-model-large",
        "Answer in one word.",
    )


def test_the_built_ins_server_key_is_reserved_and_options_for_keeps_the_servers() -> None:
    servers = {"dex": create_sdk_mcp_server("dex", tools=[lookup])}
    with pytest.raises(ValueError, match="'dex' is reserved"):
        ClaudeAgentRunner(options=ClaudeAgentOptions(mcp_servers=servers))

    def other_servers(given: ClaudeAgentOptions, _: Mapping[str, Any]) -> ClaudeAgentOptions:
        return dataclasses.replace(given, mcp_servers={})

    runner = ClaudeAgentRunner(options=options("http://127.0.0.1:9"), options_for=other_servers)
    with pytest.raises(ValueError, match="options_for must keep the runner's mcp_servers"):
        runner.session_options({})
