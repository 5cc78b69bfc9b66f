"""What ADK adds, driven in memory on the real LiteLlm client and the scripted server: the run
state's size over many turns, cancellation, callbacks, output_schema and AgentTool."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from dex_agents.runner import ToolCallsRequested, TurnCompleted, TurnContinued
from dex_agents.testing import RunnerDriver, ScriptedModelServer, reply_text, reply_tools
from google.adk.agents import LlmAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.apps import App
from google.adk.models import LlmRequest, LlmResponse
from google.adk.models.lite_llm import LiteLlm
from google.adk.tools.agent_tool import AgentTool
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from pydantic import BaseModel

from dex_agents_google_adk import AdkRunner
from dex_agents_google_adk.gate import PENDING

runs: list[str] = []


def lite_llm(server: ScriptedModelServer) -> LiteLlm:
    return LiteLlm(model="openai/gpt-test", api_base=server.base_url, api_key="test")


def get_weather(city: str) -> str:
    """The weather in a city."""
    runs.append(city)
    return f"sunny in {city}"


@pytest.fixture(autouse=True)
def clear_runs() -> None:
    runs.clear()


async def test_the_run_state_does_not_grow_with_the_history(model: ScriptedModelServer) -> None:
    agent = LlmAgent(name="helper", model=lite_llm(model), tools=[get_weather])
    driver = RunnerDriver(AdkRunner(agent), default_tool_effect="read")
    sizes = []
    for i in range(40):
        model.enqueue(reply_tools((f"c{i}", "get_weather", {"city": "Oslo"})), reply_text("Ok."))
        result = await driver.turn(f"Weather, {i}?")
        requested = result.outcomes[0]
        assert isinstance(requested, ToolCallsRequested)
        sizes.append(len(requested.framework_run_state))
    assert len(runs) == 40
    assert len(model.requests[-1].body["messages"]) == 1 + 39 * 4 + 3
    assert max(sizes[1:]) - min(sizes[1:]) < 64  # the same turn, whatever the history


async def test_cancelling_the_model_step_stops_the_streaming_request(
    model: ScriptedModelServer,
) -> None:
    driver = RunnerDriver(AdkRunner(LlmAgent(name="helper", model=lite_llm(model))))
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


async def test_model_and_tool_callbacks_run_in_model_steps_and_see_the_recorded_result(
    model: ScriptedModelServer,
) -> None:
    seen: list[tuple[str, Any]] = []

    def before_model(callback_context: CallbackContext, llm_request: LlmRequest) -> None:
        seen.append(("before_model", len(llm_request.contents)))

    def after_model(callback_context: CallbackContext, llm_response: LlmResponse) -> None:
        seen.append(("after_model", llm_response.partial))

    def after_tool(
        tool: BaseTool, args: dict[str, Any], tool_context: ToolContext, tool_response: Any
    ) -> None:
        seen.append(("after_tool", tool_response))

    def before_agent(callback_context: CallbackContext) -> None:
        seen.append(("before_agent", None))

    def after_agent(callback_context: CallbackContext) -> None:
        seen.append(("after_agent", None))

    agent = LlmAgent(
        name="helper",
        model=lite_llm(model),
        tools=[get_weather],
        before_model_callback=before_model,
        after_model_callback=after_model,
        after_tool_callback=after_tool,
        before_agent_callback=before_agent,
        after_agent_callback=after_agent,
    )
    driver = RunnerDriver(AdkRunner(agent), default_tool_effect="read")
    model.enqueue(reply_tools(("c1", "get_weather", {"city": "Oslo"})), reply_text("Cold."))
    result = await driver.turn("Weather?")
    assert result.new_messages[-1].text == "Cold."
    assert runs == ["Oslo"]
    assert [s for s in seen if s[0] == "before_model"] == [("before_model", 1), ("before_model", 3)]
    tool_responses = [s[1] for s in seen if s[0] == "after_tool"]
    # Twice: the gate's pending response when the call is deferred, the recorded result on resume.
    assert tool_responses == [PENDING, "sunny in Oslo"]
    agent_hooks = [s[0] for s in seen if s[0].endswith("_agent")]
    assert agent_hooks == ["before_agent", "after_agent"] * 2  # once per RunModel Step


async def test_the_state_agent_callbacks_write_is_kept_in_later_turns(
    model: ScriptedModelServer,
) -> None:
    """A `before_agent_callback`'s state write is on an event with only actions, which is no
    stored message: it is stored with the next message of the turn, so each RunModel Step
    (one in the first turn, two in the second) counts on from the last."""

    def visit(callback_context: CallbackContext) -> None:
        callback_context.state["visits"] = int(callback_context.state.get("visits", 0)) + 1

    def read_visits(tool_context: ToolContext) -> str:
        """How many times the agent ran."""
        return str(tool_context.state.get("visits"))

    agent = LlmAgent(
        name="counter",
        model=lite_llm(model),
        tools=[read_visits],
        before_agent_callback=visit,
    )
    driver = RunnerDriver(AdkRunner(agent), default_tool_effect="read")
    model.enqueue(reply_text("Hi."))
    await driver.turn("Hi")
    outputs: list[str | None] = []
    for turn in ("Visits?", "Visits now?"):
        model.enqueue(reply_tools(("v1", "read_visits", {})), reply_text("Counted."))
        outputs += [r.output for r in (await driver.turn(turn)).records]
    assert outputs == ["2", "4"]


class Forecast(BaseModel):
    city: str
    sunny: bool


async def test_output_schema_gives_a_structured_final_answer(model: ScriptedModelServer) -> None:
    agent = LlmAgent(name="helper", model=lite_llm(model), output_schema=Forecast)
    driver = RunnerDriver(AdkRunner(agent))
    model.enqueue(reply_text('{"city": "Oslo", "sunny": false}'))
    result = await driver.turn("Forecast for Oslo?")
    assert json.loads(result.new_messages[-1].text or "") == {"city": "Oslo", "sunny": False}
    assert model.requests[0].body["response_format"]["type"] == "json_schema"


async def test_an_agent_tool_runs_its_agent_in_the_tool_step(model: ScriptedModelServer) -> None:
    expert = LlmAgent(
        name="weather_expert",
        description="Answers weather questions.",
        model=lite_llm(model),
        tools=[get_weather],
    )
    agent = LlmAgent(name="helper", model=lite_llm(model), tools=[AgentTool(expert)])
    driver = RunnerDriver(AdkRunner(agent), default_tool_effect="read")
    model.enqueue(
        reply_tools(("a1", "weather_expert", {"request": "Oslo?"})),
        reply_tools(("w1", "get_weather", {"city": "Oslo"})),
        reply_text("Sunny in Oslo."),
        reply_text("The expert says sunny."),
    )
    result = await driver.turn("Ask the expert about Oslo.")
    assert [r.tool_name for r in result.records] == ["weather_expert"]
    assert runs == ["Oslo"]
    assert result.new_messages[-1].text == "The expert says sunny."
    assert [(m.role, m.tool_output) for m in result.new_messages][1] == ("tool", "Sunny in Oslo.")


async def test_a_tool_step_gives_the_tool_a_tool_context_on_the_turns_session(
    model: ScriptedModelServer,
) -> None:
    seen: list[tuple[str | None, Any]] = []

    def remember_tier(callback_context: CallbackContext, llm_request: LlmRequest) -> None:
        callback_context.state["tier"] = "gold"

    def discount(tool_context: ToolContext) -> str:
        """The customer's discount."""
        seen.append((tool_context.function_call_id, tool_context.state.get("tier")))
        return "10%"

    agent = LlmAgent(
        name="helper",
        model=lite_llm(model),
        tools=[discount],
        before_model_callback=remember_tier,
    )
    app = App(name="shop", root_agent=agent)
    driver = RunnerDriver(AdkRunner(app), default_tool_effect="read")
    model.enqueue(reply_tools(("d1", "discount", {})), reply_text("You get 10%."))
    result = await driver.turn("My discount?")
    assert seen == [("d1", "gold")]
    assert result.new_messages[-1].text == "You get 10%."


async def test_a_before_tool_callback_answer_skips_the_gate_and_agent_callbacks_run_per_step(
    model: ScriptedModelServer,
) -> None:
    agent_runs: list[str] = []

    def canned(tool: BaseTool, args: dict[str, Any], tool_context: ToolContext) -> dict[str, Any]:
        return {"result": "canned weather"}

    def before_agent(callback_context: CallbackContext) -> None:
        agent_runs.append("before")

    agent = LlmAgent(
        name="helper",
        model=lite_llm(model),
        tools=[get_weather],
        before_tool_callback=canned,
        before_agent_callback=before_agent,
    )
    driver = RunnerDriver(AdkRunner(agent), default_tool_effect="read")
    model.enqueue(reply_tools(("c1", "get_weather", {"city": "Oslo"})), reply_text("Cold."))
    result = await driver.turn("Weather?")
    assert result.records == [] and runs == []
    assert json.loads(tool_results_of(model, 1)["c1"]) == {"result": "canned weather"}
    assert result.new_messages[-1].text == "Cold."
    # The canned answer made no pause, but the next model call is still a Step of its own.
    assert [type(o) for o in result.outcomes] == [TurnContinued, TurnCompleted]
    assert agent_runs == ["before", "before"]


def tool_results_of(model: ScriptedModelServer, index: int) -> dict[str, str]:
    messages = model.requests[index].body["messages"]
    return {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
