"""The run state and the time of a turn over a growing history.

Runs a real ADK `LlmAgent` on LiteLlm against the scripted Chat Completions server in the
runner harness, one turn after another (one tool call and one answer each), and prints for
some turns the run state its first RunModel Step stored, the bytes the turn stored (its
messages) and the turn's wall time:

    uv run python bench/run_state_size.py [turns]
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from dex_agents.runner import ToolCallsRequested
from dex_agents.testing import (
    RunnerDriver,
    ScriptedModelServer,
    reply_text,
    reply_tools,
)
from google.adk.agents import LlmAgent
from google.adk.models.lite_llm import LiteLlm

from dex_agents_google_adk import AdkRunner


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


async def main(turns: int) -> None:
    shown = {1, 10, 50, 100, 200, 500, 1000, turns}
    print("| turn | run state bytes | stored bytes of the turn | turn time (ms) |")
    print("| ---: | ---: | ---: | ---: |")
    with ScriptedModelServer() as server:
        model = LiteLlm(model="openai/gpt-test", api_base=server.base_url, api_key="test")
        agent = LlmAgent(name="helper", model=model, tools=[get_weather])
        driver = RunnerDriver(AdkRunner(agent), default_tool_effect="read")
        for turn in range(1, turns + 1):
            server.enqueue(
                reply_tools((f"c{turn}", "get_weather", {"city": "Oslo"})), reply_text("Ok.")
            )
            started = time.perf_counter()
            result = await driver.turn(f"Weather, {turn}?")
            elapsed = (time.perf_counter() - started) * 1000
            requested = result.outcomes[0]
            assert isinstance(requested, ToolCallsRequested)
            if turn in shown:
                stored = sum(len(m.framework_item) for m in result.new_messages)
                state = len(requested.framework_run_state)
                print(f"| {turn:,} | {state:,} | {stored:,} | {elapsed:.0f} |")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200))
