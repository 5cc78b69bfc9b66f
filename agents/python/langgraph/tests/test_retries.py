"""RunModel's attempts are the only retries: the runner's model node sends each request once,
on the real ChatOpenAI client against the scripted server, without changing the application's
model (docs/design/retries.md)."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from dex_agents.testing import RunnerDriver, ScriptedModelServer
from dex_agents.testing.model_server import ScriptedReply, reply_text
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from dex_agents_langgraph import LangGraphRunner, UnsupportedGraphError


@tool
def ping() -> str:
    """Answers pong."""
    return "pong"


TOOLS = [ping]


def retrying_model(server: ScriptedModelServer, model: str = "gpt-test") -> ChatOpenAI:
    """A ChatOpenAI whose client keeps its default two retries."""
    return ChatOpenAI(model=model, base_url=server.base_url, api_key="test", stream_usage=True)  # type: ignore[arg-type]


async def test_a_failing_request_is_sent_once_per_model_step(model: ScriptedModelServer) -> None:
    llm = retrying_model(model)
    driver = RunnerDriver(LangGraphRunner(create_agent(llm, TOOLS)), default_tool_effect="read")
    model.enqueue(ScriptedReply(status=500, text="overloaded"), reply_text("Hi."))
    turn_id = driver.start_turn("Hello?")
    with pytest.raises(openai.InternalServerError, match="overloaded"):
        await driver.model_step(turn_id, None)
    assert len(model.requests) == 1
    # The next attempt (the Step's retry) sends the next request and gets the answer.
    outcome = await driver.model_step(turn_id, None)
    assert [m.text for m in outcome.new_messages] == ["Hi."]
    assert len(model.requests) == 2
    # The application's model and client are unchanged.
    assert llm.max_retries is None and llm.root_async_client.max_retries == 2


async def test_framework_retries_keeps_the_clients_own_retries(model: ScriptedModelServer) -> None:
    runner = LangGraphRunner(create_agent(retrying_model(model), TOOLS), framework_retries=True)
    driver = RunnerDriver(runner, default_tool_effect="read")
    model.enqueue(ScriptedReply(status=500), reply_text("Hi."))
    result = await driver.turn("Hello?")
    assert [m.text for m in result.new_messages] == ["Hi."]
    assert len(model.requests) == 2


class SwitchModel(AgentMiddleware[Any, Any]):
    """Sends every request to another model, as model-routing middleware does."""

    def __init__(self, other: Any) -> None:
        super().__init__()
        self.other = other

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return await handler(request.override(model=self.other))


async def test_a_model_that_middleware_picks_is_sent_without_retries_too(
    model: ScriptedModelServer,
) -> None:
    agent = create_agent(
        retrying_model(model), TOOLS, middleware=[SwitchModel(retrying_model(model, "gpt-other"))]
    )
    driver = RunnerDriver(LangGraphRunner(agent), default_tool_effect="read")
    model.enqueue(ScriptedReply(status=503))
    turn_id = driver.start_turn("Hello?")
    with pytest.raises(openai.InternalServerError):
        await driver.model_step(turn_id, None)
    assert [r.body["model"] for r in model.requests] == ["gpt-other"]


class RetryingFakeModel(GenericFakeChatModel):
    """A chat model whose (imagined) client retries by itself."""

    max_retries: int = 2


def test_a_model_whose_retries_cannot_be_turned_off_is_refused() -> None:
    model = RetryingFakeModel(messages=iter([AIMessage("Hi.")]))
    with pytest.raises(UnsupportedGraphError, match="max_retries=0"):
        LangGraphRunner(create_agent(model, TOOLS))
    LangGraphRunner(create_agent(model, TOOLS), framework_retries=True)
    model.max_retries = 0
    LangGraphRunner(create_agent(model, TOOLS))


async def test_a_model_that_middleware_picks_is_checked_per_request(
    model: ScriptedModelServer,
) -> None:
    other = RetryingFakeModel(messages=iter([AIMessage("Hi.")]))
    agent = create_agent(retrying_model(model), TOOLS, middleware=[SwitchModel(other)])
    driver = RunnerDriver(LangGraphRunner(agent), default_tool_effect="read")
    with pytest.raises(UnsupportedGraphError, match="RetryingFakeModel"):
        await driver.model_step(driver.start_turn("Hello?"), None)
    assert model.requests == []
