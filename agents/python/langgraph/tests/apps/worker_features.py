"""The Worker app of tests/test_worker_features.py: create_agent agents on ChatOpenAI against
the scripted Chat Completions server, with a tool that reads the graph's state, structured
output (ToolStrategy and ProviderStrategy), model/tool middleware with its own state key, and a
tool that updates the graph's state with a Command.
Tools and hooks record their runs to the ToolRunLog at $TOOL_LOG; the middleware and the
tools also write to the graph's stream writer (LangGraph's "custom" stream mode)."""

from __future__ import annotations

import operator
import os
from typing import Annotated, Any, NotRequired

from dex_agents import AgentSessionFlow, AgentSessionOptions, CompactionPolicy
from dex_agents.testing import MODEL_URL_ENV
from dex_agents.testing.tool_log import ToolRunLog
from langchain.agents import AgentState, create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langchain.tools import InjectedToolCallId, ToolRuntime
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import BaseModel

from dex_agents_langgraph import LangGraphRunner, current_tool_execution


def _log() -> ToolRunLog:
    return ToolRunLog(os.environ["TOOL_LOG"])


model = ChatOpenAI(
    model="gpt-test",
    base_url=os.environ[MODEL_URL_ENV],
    api_key="test",  # type: ignore[arg-type]
    streaming=True,
    stream_usage=True,
)


@tool
def count_messages(topic: str, runtime: ToolRuntime) -> str:
    """Counts the conversation's messages."""
    messages = runtime.state["messages"]
    _log().record(
        "count_messages",
        messages=len(messages),
        call=runtime.tool_call_id,
        key=current_tool_execution().idempotency_key,
        calls_so_far=runtime.state.get("model_calls"),
    )
    runtime.stream_writer({"counted": len(messages)})
    return f"{len(messages)} messages, call {runtime.tool_call_id}"


class Forecast:
    """A value that is not JSON: its stream event carries its `str`."""

    def __init__(self, city: str) -> None:
        self.city = city

    def __str__(self) -> str:
        return f"Forecast for {self.city}"


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    _log().record("get_weather", city=city)
    get_stream_writer()({"forecast": Forecast(city)})
    return f"Sunny in {city}"


class Triage(BaseModel):
    category: str
    urgent: bool


class CallCounterState(AgentState[Any]):
    model_calls: NotRequired[int]


class CallCounter(AgentMiddleware[CallCounterState, Any]):
    """Counts the turn's model calls in its own state key; logs every hook run."""

    state_schema = CallCounterState

    def before_agent(self, state: CallCounterState, runtime: Runtime[Any]) -> None:
        _log().record("before_agent", count=state.get("model_calls"))

    def after_agent(self, state: CallCounterState, runtime: Runtime[Any]) -> None:
        _log().record("after_agent", count=state.get("model_calls"))

    def before_model(self, state: CallCounterState, runtime: Runtime[Any]) -> dict[str, Any]:
        count = state.get("model_calls", 0)
        _log().record("before_model", count=count, messages=len(state["messages"]))
        runtime.stream_writer({"model_call": count + 1})
        return {"model_calls": count + 1}

    def after_model(self, state: CallCounterState, runtime: Runtime[Any]) -> None:
        _log().record("after_model", count=state.get("model_calls"))

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        _log().record("wrap_tool_call", call=request.tool_call["id"])
        return await handler(request)


class MoodState(AgentState[Any]):
    moods: NotRequired[Annotated[list[str], operator.add]]


class MoodWatcher(AgentMiddleware[MoodState, Any]):
    """Declares the `moods` key (a reducer that appends) and logs it before each model call."""

    state_schema = MoodState

    def before_model(self, state: MoodState, runtime: Runtime[Any]) -> None:
        _log().record("mood_before_model", moods=state.get("moods"))


@tool
def set_mood(mood: str, call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
    """Sets the conversation's mood."""
    _log().record("set_mood", mood=mood)
    message = ToolMessage(f"mood is {mood}", tool_call_id=call_id)
    return Command(update={"messages": [message], "moods": [mood]})


def _flow(
    flow_type: str, agent: Any, compaction: CompactionPolicy | None = None
) -> AgentSessionFlow:
    options = AgentSessionOptions(default_tool_effect="read", compaction=compaction)
    return AgentSessionFlow(LangGraphRunner(agent), flow_type=flow_type, options=options)


flows = [
    _flow("InjectedAgent", create_agent(model, [count_messages])),
    _flow(
        "ToolStrategyAgent",
        create_agent(model, [get_weather], response_format=ToolStrategy(Triage)),
    ),
    _flow(
        "ProviderStrategyAgent",
        create_agent(model, [get_weather], response_format=ProviderStrategy(Triage)),
    ),
    _flow(
        "CompactingAgent",
        create_agent(model, [get_weather], system_prompt="Be brief."),
        CompactionPolicy(context_window_tokens=560),
    ),
    _flow("MoodAgent", create_agent(model, [set_mood], middleware=[MoodWatcher()])),
    _flow(
        "MiddlewareAgent",
        create_agent(model, [count_messages, get_weather], middleware=[CallCounter()]),
    ),
]
