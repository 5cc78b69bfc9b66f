"""What a warm entry costs in memory: each adapter's runner with its warm path on and off.

Run from agents/python/core/bench: `uv sync --locked --compile-bytecode && uv run python
warm_memory.py [--sessions N] [--turns T]`. For each adapter (Pydantic AI, OpenAI Agents) and
each setting (`warm_runs=0` and `warm_runs=N`), N sessions in one process, driven by
`RunnerDriver` against a scripted model server on loopback: T turns each (a user message, a
`lookup` call and an answer), then one more turn stopped after its first model step, at its
tool call, where the warm path keeps its entry. Prints the Python heap in use
(`tracemalloc`) with every session stopped there, warm and cold, and the difference per
session: what one warm entry holds beyond what the session's history costs anyway.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import tracemalloc
from collections.abc import Callable

from dex_agents_openai_agents import OpenAIAgentsRunner
from dex_agents_pydantic_ai import PydanticAiRunner
from e2e_app import OPTIONS, openai_agents_agent, openai_agents_run_config, pydantic_ai_agent

from dex_agents.runner import ToolCallsRequested
from dex_agents.testing import ScriptedModelServer, reply_text, reply_tools
from dex_agents.testing.driver import RunnerDriver
from dex_agents.warm_states import WarmRunner

MakeRunner = Callable[[int, str], WarmRunner]
ADAPTERS: dict[str, MakeRunner] = {
    "Pydantic AI": lambda n, url: PydanticAiRunner(pydantic_ai_agent(url), warm_runs=n),
    "OpenAI Agents": lambda n, url: OpenAIAgentsRunner(
        openai_agents_agent(), run_config=openai_agents_run_config(url), warm_runs=n
    ),
}


async def _heap_with_sessions_at_a_tool_call(
    make: MakeRunner, warm_runs: int, sessions: int, turns: int
) -> tuple[int, list[RunnerDriver]]:
    with ScriptedModelServer() as model:
        runner = make(warm_runs, model.base_url)
        drivers = [
            RunnerDriver(runner, tool_policies=dict(OPTIONS.tool_policies), flow_id=f"s-{i}")
            for i in range(sessions)
        ]
        for turn in range(turns):
            for driver in drivers:
                model.enqueue(reply_tools((f"c{turn}", "lookup", {"key": "k"})), reply_text("v"))
                await driver.turn(f"Turn {turn}?")
        for driver in drivers:
            model.enqueue(reply_tools(("last", "lookup", {"key": "k"})))
            turn_id = driver.start_turn("Once more?")
            outcome = await driver.model_step(turn_id, None)
            assert isinstance(outcome, ToolCallsRequested)
        gc.collect()
        heap = tracemalloc.get_traced_memory()[0]
        for driver in drivers:
            runner.warm_runs.drop(driver.flow_id)
        return heap, drivers


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    tracemalloc.start()
    print(f"{args.sessions} sessions of {args.turns} turns, each stopped at a tool call")
    for name, make in ADAPTERS.items():
        heaps = {}
        for warm_runs in (0, args.sessions):
            heaps[warm_runs], drivers = await _heap_with_sessions_at_a_tool_call(
                make, warm_runs, args.sessions, args.turns
            )
            del drivers
            gc.collect()
        cold, warm = heaps[0], heaps[args.sessions]
        per_session = (warm - cold) / args.sessions / 1024
        print(
            f"{name}: heap cold {cold / 2**20:.1f} MB, warm {warm / 2**20:.1f} MB, "
            f"a warm entry {per_session:.1f} KB"
        )


if __name__ == "__main__":
    asyncio.run(main())
