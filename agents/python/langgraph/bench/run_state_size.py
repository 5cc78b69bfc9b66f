"""How the stored bytes of a LangGraph session grow over many turns.

Run from agents/python/langgraph: `uv run python bench/run_state_size.py [turns]` (1,000 by
default). A turn is one tool call and one answer of the same size, made by a real
`create_agent` graph driven in memory by the runner harness (`RunnerDriver`) as the session
Flow drives it; the chat model is LangChain's `GenericFakeChatModel` (in process). For turn
1, 10, 100, 250, 500 and the last, the session's stored history is that many turns minus one,
copies of one real turn's stored messages renumbered (as the turns before would have stored
them), and one real turn runs on it. Printed: the run state its first RunModel Step stored
(`FrameworkRunState`), the bytes of the messages the turn stored, and its wall time (three
RunModel Steps and one CallTool). The first two stay flat; the time grows with the history
each Step reads.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Iterator
from typing import Any

from dex_agents.runner import ToolCallsRequested
from dex_agents.testing import RunnerDriver
from dex_agents.types import AgentMessage
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


def replies(turn: int) -> Iterator[AIMessage]:
    """The model's two answers in turn `turn`: a tool call, then the text."""
    call = {"id": f"c{turn:05d}", "name": "get_weather", "args": {"city": "Paris"}}
    yield AIMessage("", tool_calls=[call])
    yield AIMessage("Sunny in Paris, " + "very " * 20 + "sunny.")


def question(turn: int) -> str:
    return f"Weather, question {turn:05d}? " + "please " * 20


def renumbered(framework_item: str, turn: int) -> str:
    """A stored message of turn 1 as turn `turn` stores it: its numbers and its message ID
    (LangGraph's add_messages merges messages with the same ID) are the turn's own."""
    encoded = json.loads(framework_item.replace("00001", f"{turn:05d}"))
    if encoded["data"].get("id"):
        encoded["data"]["id"] = f"{encoded['data']['id']}-{turn}"
    return json.dumps(encoded)


def driver_at(turn: int, template: list[AgentMessage]) -> RunnerDriver:
    """A session whose stored history is `turn - 1` turns like `template` (one real turn's
    stored messages, renumbered), about to run turn `turn`."""
    model = ScriptedChatModel(messages=replies(turn), disable_streaming=True)
    driver = RunnerDriver(
        LangGraphRunner(create_agent(model, [get_weather])), default_tool_effect="read"
    )
    for earlier in range(1, turn):
        for message in template:
            item = renumbered(message.framework_item, earlier)
            text = message.text.replace("00001", f"{earlier:05d}") if message.text else None
            driver.messages.append(
                message.model_copy(
                    update={
                        "framework_item": item,
                        "text": text,
                        "sequence": len(driver.messages) + 1,
                        "turn_id": f"turn-{earlier}",
                    }
                )
            )
    driver.turn_count = turn - 1
    return driver


async def measure(turn: int, template: list[AgentMessage]) -> tuple[int, int, int, float]:
    """One real turn after `turn - 1` stored turns: its run state bytes (the first RunModel
    Step's), the bytes of the messages it stored, and its wall time."""
    driver = driver_at(turn, template)
    started = time.perf_counter()
    result = await driver.turn(question(turn))
    elapsed = time.perf_counter() - started
    requested = result.outcomes[0]
    assert isinstance(requested, ToolCallsRequested)
    stored = sum(len(m.model_dump_json().encode()) for m in driver.messages[-4:])
    return turn, len(requested.framework_run_state.encode()), stored, elapsed


async def run(turns: list[int]) -> list[tuple[int, int, int, float]]:
    first = driver_at(1, [])
    await first.turn(question(1))
    template = list(first.messages)
    return [await measure(turn, template) for turn in turns]


def main() -> None:
    last = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000
    marks = [t for t in (1, 10, 100, 250, 500, 1_000, 2_000, 5_000) if t < last]
    rows = asyncio.run(run([*marks, last]))
    print("| turn | run state bytes | stored bytes of the turn | turn time (ms) |")
    print("| ---: | ---: | ---: | ---: |")
    for turn, state, stored, elapsed in rows:
        print(f"| {turn:,} | {state:,} | {stored:,} | {elapsed * 1000:.0f} |")


if __name__ == "__main__":
    main()
