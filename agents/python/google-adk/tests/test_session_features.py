"""What the session offers, in the runner harness: built-in tools, plan mode, session
settings choosing the model and the instructions, and compaction, on a real ADK `LlmAgent` with
ADK's LiteLlm client against the scripted Chat Completions server. (The Worker-level rows are
tests/test_session_feature_matrix.py.)"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from dex_agents.builtins import ask_user_result, build_plan_note
from dex_agents.runner import (
    AgentTurnContext,
    ContextSummaryRequest,
    ToolCallsRequested,
    TurnCompleted,
)
from dex_agents.stepwise.items import SUMMARY_PREFIX
from dex_agents.testing import RunnerDriver, ScriptedModelServer, reply_text, reply_tools
from dex_agents.types import AgentPlan, AgentPlanTask, AgentToolCall, ContextSummary
from google.adk.agents import LlmAgent
from google.adk.agents.readonly_context import ReadonlyContext

from dex_agents_google_adk import SESSION_SETTINGS_STATE_KEY, AdkRunner

from .test_features import lite_llm

CREATED = "2026-01-01T00:00:00Z"


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def ask_user(question: str) -> str:
    """The agent's own ask_user, which an enabled built-in replaces."""
    return "never asked"


@dataclasses.dataclass
class FeatureDriver(RunnerDriver):
    """The runner driver with the turn's session features."""

    features: dict[str, Any] = dataclasses.field(default_factory=dict)

    def context(
        self, turn_id: str, run_state: str | None, records: Sequence[AgentToolCall] | None = None
    ) -> AgentTurnContext:
        return dataclasses.replace(super().context(turn_id, run_state, records), **self.features)


def instructions_from_settings(context: ReadonlyContext) -> str:
    """An ADK InstructionProvider: the session's instructions, else a default."""
    settings: Mapping[str, Any] = context.state.get(SESSION_SETTINGS_STATE_KEY, {})
    return str(settings.get("instructions", "Be brief."))


def make_runner(model: ScriptedModelServer, **options: Any) -> AdkRunner:
    agent = LlmAgent(
        name="helper",
        model=lite_llm(model),
        instruction=instructions_from_settings,
        tools=[get_weather, ask_user],
    )
    return AdkRunner(agent, **options)


def offered(model: ScriptedModelServer, index: int) -> list[str]:
    return [t["function"]["name"] for t in model.requests[index].body.get("tools", [])]


def messages(model: ScriptedModelServer, index: int) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = model.requests[index].body["messages"]
    return sent


def texts(model: ScriptedModelServer, index: int) -> list[tuple[str, str]]:
    return [(m["role"], m.get("content") or "") for m in messages(model, index)]


async def test_enabled_built_ins_are_offered_deferred_and_their_results_read(
    model: ScriptedModelServer,
) -> None:
    driver = FeatureDriver(make_runner(model), default_tool_effect="read")
    model.enqueue(reply_text("No built-ins."))
    await driver.turn("Hi")
    assert offered(model, 0) == ["get_weather", "ask_user"]  # the agent's own ask_user

    driver.features = {"enabled_built_in_tools": ("ask_user", "durable_wait")}
    model.enqueue(reply_tools(("q1", "ask_user", {"question": "Which city?"})), reply_text("Ok."))
    turn_id = driver.start_turn("Weather?")
    requested = await driver.model_step(turn_id, None)
    assert offered(model, 1) == ["get_weather", "ask_user", "durable_wait"]
    ask = next(t for t in model.requests[1].body["tools"] if t["function"]["name"] == "ask_user")
    assert "choices" in ask["function"]["parameters"]["properties"]  # the built-in's declaration
    assert isinstance(requested, ToolCallsRequested)
    [call] = requested.tool_calls
    assert (call.tool_name, json.loads(call.arguments)) == ("ask_user", {"question": "Which city?"})
    assert call.policy is not None
    assert (call.policy.effect, call.policy.requires_approval) == ("read", False)

    # The core runs the built-in (a question answered); its result resumes ADK's invocation.
    answered = driver.approved_record(turn_id, call).model_copy(
        update={"status": "succeeded", "output": ask_user_result("Oslo")}
    )
    driver.records = [answered]
    done = await driver.model_step(turn_id, requested.framework_run_state)
    assert isinstance(done, TurnCompleted)
    [tool_message] = [m for m in messages(model, 2) if m["role"] == "tool"]
    assert json.loads(json.loads(tool_message["content"])["result"]) == {
        "status": "answered",
        "answer": "Oslo",
    }
    assert [m.role for m in driver.messages[-3:]] == ["assistant", "tool", "assistant"]


async def test_a_planning_turn_offers_only_write_todos_after_the_plan_note(
    model: ScriptedModelServer,
) -> None:
    driver = FeatureDriver(make_runner(model), default_tool_effect="read")
    model.enqueue(reply_text("Hello."))
    await driver.turn("Hi")
    plan = AgentPlan(
        revision=1,
        status="draft",
        tasks=[AgentPlanTask(content="check Oslo", status="pending")],
        updated_at=CREATED,
    )
    driver.features = {
        "enabled_built_in_tools": ("ask_user", "durable_wait", "write_todos"),
        "interaction_mode": "planning",
        "plan": plan,
    }
    todos = {"todos": [{"content": "check Oslo", "status": "pending"}]}
    model.enqueue(reply_tools(("t1", "write_todos", todos)), reply_text("Planned."))
    turn_id = driver.start_turn("Plan the trip.")
    requested = await driver.model_step(turn_id, None)
    assert isinstance(requested, ToolCallsRequested)
    assert offered(model, 1) == ["write_todos"]
    note = build_plan_note(plan, "planning")
    assert note is not None and "This turn only plans" in note
    sent = texts(model, 1)
    assert sent[-2:] == [("user", note), ("user", "Plan the trip.")]
    assert ("user", "Hi") in sent and ("assistant", "Hello.") in sent

    written = driver.approved_record(turn_id, requested.tool_calls[0]).model_copy(
        update={"status": "succeeded", "output": '{"status":"updated"}'}
    )
    driver.records = [written]
    done = await driver.model_step(turn_id, requested.framework_run_state)
    assert isinstance(done, TurnCompleted)
    assert offered(model, 2) == ["write_todos"]
    assert ("user", note) in texts(model, 2)
    # The note is the Step's, never stored.
    assert all(m.text != note for m in driver.messages)


async def test_session_settings_choose_the_model_and_the_instructions(
    model: ScriptedModelServer,
) -> None:
    def resolve_model(settings: Mapping[str, Any]) -> str | None:
        name = settings.get("model")
        return f"openai/{name}" if name else None

    driver = FeatureDriver(make_runner(model, resolve_model=resolve_model))
    model.enqueue(reply_text("One."), reply_text("Two."))
    await driver.turn("Hi")
    driver.features = {"session_settings": {"model": "gpt-other", "instructions": "Speak Latin."}}
    await driver.turn("Again")
    assert [r.body["model"] for r in model.requests] == ["gpt-test", "gpt-other"]
    assert texts(model, 0)[0][1].startswith("Be brief.")
    assert texts(model, 1)[0][0] == "system" and texts(model, 1)[0][1].startswith("Speak Latin.")


async def test_a_template_reads_a_setting_from_the_session_state(
    model: ScriptedModelServer,
) -> None:
    agent = LlmAgent(
        name="helper",
        model=lite_llm(model),
        instruction="You speak {temp:dex_setting_language?}.",
    )
    driver = FeatureDriver(AdkRunner(agent), features={"session_settings": {"language": "Latin"}})
    model.enqueue(reply_text("Salve."))
    await driver.turn("Hi")
    assert texts(model, 0)[0][1].startswith("You speak Latin.")


async def test_compaction_keeps_calls_with_their_responses_and_the_summary_comes_first(
    model: ScriptedModelServer,
) -> None:
    runner = make_runner(model)
    driver = FeatureDriver(runner, default_tool_effect="read")
    for i in range(3):
        model.enqueue(reply_tools((f"c{i}", "get_weather", {"city": "Oslo"})), reply_text("Ok."))
        await driver.turn(f"Weather, {i}? " + "padding " * 40)
    # user, assistant call, tool response, assistant answer, per turn
    assert [m.role for m in driver.messages[:4]] == ["user", "assistant", "tool", "assistant"]
    turn_id = driver.start_turn("And now?")
    context = driver.context(turn_id, None)
    estimate = runner.estimate_input_tokens(context)
    assert estimate > 3 * 80

    for budget in (0, 10, 60, 10_000):
        cutoff = runner.select_compaction_cutoff(context, budget)
        assert cutoff is not None
        [cut] = [m for m in driver.messages if m.sequence == cutoff]
        following = driver.messages[cutoff]  # sequences count from 1
        assert cut.role != "tool" or following.role != "tool"
        assert following.role != "tool"  # the next message is never a lone response
        assert cut.role != "assistant" or cut.tool_call_id is None
    # A small budget keeps only what follows the last tool response: the answer and the
    # new message.
    assert [m.role for m in driver.messages[-3:]] == ["tool", "assistant", "user"]
    assert runner.select_compaction_cutoff(context, 10) == driver.messages[-3].sequence

    through = driver.messages[7].sequence  # the end of the second turn
    model.enqueue(reply_text("The user asked about Oslo's weather twice; it was sunny."))
    result = await runner.summarize_context(
        ContextSummaryRequest(
            flow_id=driver.flow_id,
            turn_id=turn_id,
            attempt=1,
            previous_summary=None,
            messages=driver.messages[:8],
            through_sequence=through,
            events=driver.events,
            heartbeat=lambda: None,
            input_token_budget=100_000,
        )
    )
    assert result.text == "The user asked about Oslo's weather twice; it was sunny."
    assert result.usage is not None and result.usage.model_calls == 1
    [summary_request] = messages(model, len(model.requests) - 1)
    assert summary_request["role"] == "user"
    assert "Assistant called get_weather with" in summary_request["content"]
    assert "Tool result (get_weather): sunny in Oslo" in summary_request["content"]
    assert model.requests[-1].body["model"] == "gpt-test"
    assert "tools" not in model.requests[-1].body

    summary = ContextSummary(
        generation=1, last_sequence=through, text=result.text, created_at=CREATED
    )
    kept = driver.messages[8:]
    driver.features = {"context_summary": summary}
    driver.messages = kept
    model.enqueue(reply_text("Still sunny."))
    await driver.model_step(turn_id, None)
    sent = messages(model, len(model.requests) - 1)
    assert sent[0]["role"] == "system"
    assert sent[1] == {"role": "user", "content": f"{SUMMARY_PREFIX}\n{result.text}"}
    calls = {c["id"] for m in sent for c in m.get("tool_calls") or []}
    assert calls == {"c2"}
    assert {m["tool_call_id"] for m in sent if m["role"] == "tool"} == calls
