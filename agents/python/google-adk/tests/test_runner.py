"""Runner-level tests: a real ADK `LlmAgent` on ADK's real LiteLlm client against the
scripted Chat Completions server, driven in memory as the session Flow drives a runner."""

from __future__ import annotations

import json

import pytest
from dex_agents.runner import ToolCallsRequested, ToolExecutionError, ToolPolicy
from dex_agents.testing import Reject, RunnerDriver, ScriptedModelServer, reply_text, reply_tools
from google.adk.agents import BaseAgent, LlmAgent, SequentialAgent
from google.adk.models.lite_llm import LiteLlm
from google.adk.tools import FunctionTool, ToolContext
from google.adk.tools.mcp_tool import McpToolset, StdioConnectionParams
from mcp import StdioServerParameters

from dex_agents_google_adk import AdkRunner, UnsupportedAgentError, current_tool_execution
from dex_agents_google_adk.gate import GatedToolset

MCP = StdioConnectionParams(server_params=StdioServerParameters(command="true"))


class Log:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def make_agent(server: ScriptedModelServer, log: Log) -> LlmAgent:
    def get_weather(city: str, tool_context: ToolContext) -> str:
        """The weather in a city."""
        key = current_tool_execution().idempotency_key
        log.calls.append(("get_weather", city, key))
        tool_context.state["last_city"] = city
        return f"sunny in {city}"

    def send_email(to: str) -> str:
        """Sends an email."""
        log.calls.append(("send_email", to, current_tool_execution().idempotency_key))
        return f"sent to {to}"

    email = FunctionTool(send_email, require_confirmation=True)
    email.custom_metadata = {"effect": "non_idempotent_write"}
    return LlmAgent(
        name="helper",
        model=LiteLlm(model="openai/gpt-test", api_base=server.base_url, api_key="test"),
        instruction="Be brief.",
        tools=[get_weather, email],
    )


@pytest.fixture
def log() -> Log:
    return Log()


@pytest.fixture
def driver(model: ScriptedModelServer, log: Log) -> RunnerDriver:
    return RunnerDriver(AdkRunner(make_agent(model, log)), default_tool_effect="read")


def tool_results(body: dict[str, object]) -> dict[str, str]:
    messages = body["messages"]
    assert isinstance(messages, list)
    return {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}


async def test_a_text_answer_is_one_model_call_streamed(
    driver: RunnerDriver, model: ScriptedModelServer
) -> None:
    model.enqueue(reply_text("Hello there."))
    result = await driver.turn("Hi")
    assert [(m.role, m.text) for m in result.new_messages] == [("assistant", "Hello there.")]
    assert driver.events.texts() == "Hello there."
    assert result.final.usage is not None and result.final.usage.model_calls == 1
    assert result.final.usage.input_tokens == 10
    assert len(model.requests) == 1
    assert model.requests[0].body["messages"][0]["content"].startswith("Be brief.")


async def test_parallel_tool_calls_run_in_their_own_steps_once(
    driver: RunnerDriver, model: ScriptedModelServer, log: Log
) -> None:
    model.enqueue(
        reply_tools(
            ("c1", "get_weather", {"city": "Paris"}), ("c2", "get_weather", {"city": "Oslo"})
        ),
        reply_text("Sunny in both."),
    )
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
    sent = tool_results(model.requests[1].body)
    assert {k: json.loads(v) for k, v in sent.items()} == {
        "c1": {"result": "sunny in Paris"},
        "c2": {"result": "sunny in Oslo"},
    }
    assert [(m.role, m.tool_call_id, m.tool_output) for m in result.new_messages] == [
        ("assistant", "c1", None),
        ("tool", "c1", "sunny in Paris"),
        ("tool", "c2", "sunny in Oslo"),
        ("assistant", None, None),
    ]
    assert result.new_messages[-1].text == "Sunny in both."
    assert result.final.usage is not None and result.final.usage.model_calls == 1


async def test_the_next_turn_replays_the_stored_history(
    driver: RunnerDriver, model: ScriptedModelServer
) -> None:
    model.enqueue(reply_tools(("c1", "get_weather", {"city": "Oslo"})), reply_text("Cold."))
    await driver.turn("Weather in Oslo?")
    model.enqueue(reply_text("You asked about Oslo."))
    await driver.turn("What did I ask?")
    sent = model.requests[-1].body["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert json.loads(sent[3]["content"]) == {"result": "sunny in Oslo"}


async def test_policy_comes_from_metadata_and_confirmation_and_a_rejection_is_seen(
    driver: RunnerDriver, model: ScriptedModelServer, log: Log
) -> None:
    model.enqueue(reply_tools(("e1", "send_email", {"to": "ana@example.com"})), reply_text("No."))
    result = await driver.turn("Email Ana.", decide=lambda record: Reject("Not today."))
    requested = result.outcomes[0]
    assert isinstance(requested, ToolCallsRequested)
    policy = requested.tool_calls[0].policy
    assert policy == ToolPolicy(effect="non_idempotent_write", requires_approval=True)
    assert log.calls == []
    assert "Not today." in json.loads(tool_results(model.requests[1].body)["e1"])["result"]


async def test_a_tool_policy_overrides_the_metadata(model: ScriptedModelServer, log: Log) -> None:
    driver = RunnerDriver(
        AdkRunner(make_agent(model, log)),
        tool_policies={"get_weather": ToolPolicy(effect="idempotent_write")},
    )
    model.enqueue(reply_tools(("c1", "get_weather", {"city": "Rome"})), reply_text("Ok."))
    result = await driver.turn("Weather?")
    requested = result.outcomes[0]
    assert isinstance(requested, ToolCallsRequested)
    assert requested.tool_calls[0].policy is not None
    assert requested.tool_calls[0].policy.effect == "idempotent_write"


class Custom(BaseAgent):
    """A custom agent: its own loop, which ADK cannot resume between Steps."""


def test_a_custom_agent_and_a_tool_name_two_agents_share_are_refused(
    model: ScriptedModelServer, log: Log
) -> None:
    with pytest.raises(UnsupportedAgentError, match="'mine' is a Custom"):
        AdkRunner(SequentialAgent(name="steps", sub_agents=[Custom(name="mine")]))
    twin = LlmAgent(name="twin", model=LiteLlm(model="openai/gpt-test"), tools=[get_weather])
    parent = LlmAgent(
        name="parent",
        model=LiteLlm(model="openai/gpt-test"),
        tools=[get_weather],
        sub_agents=[twin],
    )
    with pytest.raises(UnsupportedAgentError, match="agents 'twin' and 'parent' both have"):
        AdkRunner(parent)


def test_a_toolset_is_gated(model: ScriptedModelServer, log: Log) -> None:
    toolset = McpToolset(connection_params=MCP)
    agent = make_agent(model, log).clone(update={"tools": [toolset]})
    runner = AdkRunner(agent)
    # The toolset, gated, then the gates of the built-ins (offered only when enabled).
    gated, *built_ins = runner._app.root_agent.tools  # type: ignore[attr-defined]
    assert isinstance(gated, GatedToolset) and gated.toolset is toolset
    assert [t.name for t in built_ins] == ["ask_user", "durable_wait", "write_todos"]
    assert agent.tools == [toolset]  # the application's agent is not changed


async def test_a_tool_that_raises_fails_and_the_model_reads_the_failure(
    model: ScriptedModelServer,
) -> None:
    def flaky(city: str) -> str:
        """Always fails."""
        raise ToolExecutionError(f"no station in {city}")

    llm = LiteLlm(model="openai/gpt-test", api_base=model.base_url, api_key="test")
    agent = LlmAgent(name="helper", model=llm, tools=[flaky])
    driver = RunnerDriver(AdkRunner(agent), default_tool_effect="read")
    model.enqueue(reply_tools(("f1", "flaky", {"city": "Oslo"})), reply_text("Sorry."))
    result = await driver.turn("Weather?")
    assert [r.status for r in result.records] == ["failed"]
    seen = json.loads(tool_results(model.requests[1].body)["f1"])["result"]
    assert "no station in Oslo" in seen
    assert result.new_messages[-1].text == "Sorry."
