"""Streamed reasoning: ChatOpenAI on the Responses API streams the scripted server's reasoning
summaries as `reasoning` content blocks, which become `reasoning_delta` events; the stored
message (reasoning item included) is sent back on the next model call."""

from __future__ import annotations

from dex_agents.testing import RunnerDriver, ScriptedModelServer
from dex_agents.testing.model_server import reply_text, reply_tools
from langchain.agents import create_agent
from langchain_openai import ChatOpenAI

from dex_agents_langgraph import LangGraphRunner

from .test_runner import Log, weather_tools


async def test_reasoning_summaries_stream_as_reasoning_deltas(model: ScriptedModelServer) -> None:
    llm = ChatOpenAI(
        model="gpt-test",
        base_url=model.base_url,
        api_key="test",  # type: ignore[arg-type]
        use_responses_api=True,
        streaming=True,
    )
    driver = RunnerDriver(
        LangGraphRunner(create_agent(llm, weather_tools(Log()))), default_tool_effect="read"
    )
    model.enqueue(
        reply_tools(("c1", "get_weather", {"city": "Oslo"}), reasoning="Weather first."),
        reply_text("Cold in Oslo.", reasoning="It said sunny; Oslo is cold anyway."),
    )
    result = await driver.turn("Weather in Oslo?")
    assert driver.events.texts("reasoning_delta") == (
        "Weather first.It said sunny; Oslo is cold anyway."
    )
    assert driver.events.texts() == "Cold in Oslo."
    assert result.new_messages[-1].text == "Cold in Oslo."
    # The second request carried the first answer's reasoning item and the tool's result.
    items = model.requests[1].body["input"]
    assert "reasoning" in [i.get("type") for i in items]
    assert [i["output"] for i in items if i.get("type") == "function_call_output"] == [
        "sunny in Oslo"
    ]
    model.enqueue(reply_text("Still cold."))
    await driver.turn("And now?")
    assert [i.get("type") for i in model.requests[2].body["input"]].count("reasoning") == 2
