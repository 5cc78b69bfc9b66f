"""How the stored bytes of a LangGraph session grow over many turns.

Run from agents/python/langgraph: `uv run python bench/run_state_size.py [turns]` (1,000 by
default). Each turn is one tool call and one answer of the same size, made by a real
`create_agent` graph driven in memory by the runner harness (`RunnerDriver`) as the session
Flow drives it. The chat model is LangChain's `GenericFakeChatModel` (in process, unstreamed):
over HTTP, the OpenAI SDK's own request building for thousands of history messages would be
most of the time. For chosen turns it prints the framework run state the turn's first RunModel
Step stored (`FrameworkRunState`), the bytes of the messages the turn stored, and the turn's
wall time (three RunModel Steps and one CallTool); the first two stay flat while the history
grows, the time grows with the history each Step reads.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterator
from typing import Any

from dex_agents.runner import ToolCallsRequested
from dex_agents.testing import RunnerDriver
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from dex_agents_langgraph import LangGraphRunner


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


class ScriptedChatModel(GenericFakeChatModel):
    """GenericFakeChatModel that accepts tools (create_agent binds them)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def replies() -> Iterator[AIMessage]:
    turn = 0
    while True:
        turn += 1
        call = {"id": f"c{turn:05d}", "name": "get_weather", "args": {"city": "Paris"}}
        yield AIMessage("", tool_calls=[call])
        yield AIMessage("Sunny in Paris, " + "very " * 20 + "sunny.")


def report_turns(turns: int) -> list[int]:
    marks = [1, 10, 100, 250, 500, 750, 1_000, 2_000, 5_000]
    return [t for t in marks if t <= turns] + ([turns] if turns not in marks else [])


async def run(turns: int) -> list[tuple[int, int, int, float]]:
    rows: list[tuple[int, int, int, float]] = []
    marks = set(report_turns(turns))
    agent = create_agent(
        ScriptedChatModel(messages=replies(), disable_streaming=True), [get_weather]
    )
    driver = RunnerDriver(LangGraphRunner(agent), default_tool_effect="read")
    for turn in range(1, turns + 1):
        started = time.perf_counter()
        stored_before = len(driver.messages)
        result = await driver.turn(f"Weather, question {turn:05d}? " + "please " * 20)
        elapsed = time.perf_counter() - started
        requested = result.outcomes[0]
        assert isinstance(requested, ToolCallsRequested)
        stored = sum(len(m.model_dump_json().encode()) for m in driver.messages[stored_before:])
        if turn in marks:
            rows.append((turn, len(requested.framework_run_state.encode()), stored, elapsed))
    return rows


def main() -> None:
    turns = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000
    rows = asyncio.run(run(turns))
    print("| turn | run state bytes | stored bytes of the turn | turn time (ms) |")
    print("| ---: | ---: | ---: | ---: |")
    for turn, state, stored, elapsed in rows:
        print(f"| {turn:,} | {state:,} | {stored:,} | {elapsed * 1000:.0f} |")


if __name__ == "__main__":
    main()
