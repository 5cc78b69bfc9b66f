"""What warm runs save: the Pydantic AI runner's CPU per turn, warm and cold, in one process.

Run from agents/python/core/bench: `uv sync --locked && uv run python pydantic_ai_warm.py
[--turns N]`. Three sessions of N turns (default 300), interleaved turn by turn so machine
noise hits all alike: Pydantic AI alone (`agent.run` with the caller keeping the history), the
adapter's runner cold (`warm_runs=0`) and warm (`warm_runs=8`), both driven by `RunnerDriver` as
the session Flow calls them, with no engine and no database. Each turn is a user message, one
tool call and a text answer from an in-process FunctionModel, so the figures are the
adapter's and Pydantic AI's own work; the collector's passes over what the process holds are kept
out (`harness.freeze_harness`). Prints the median CPU per turn (process time) in windows
of turns, and the warm runner's hits.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable

from dex_agents_pydantic_ai import PydanticAiRunner
from harness import freeze_harness
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from dex_agents.runner import ToolPolicy
from dex_agents.testing.driver import RunnerDriver

ANSWER = "The order has shipped."


def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    last = messages[-1]
    if isinstance(last, ModelRequest) and any(isinstance(p, ToolReturnPart) for p in last.parts):
        return ModelResponse(parts=[TextPart(ANSWER)])
    call_id = f"call-{len(messages)}"
    return ModelResponse(parts=[ToolCallPart("lookup", {"order_id": "o-1"}, call_id)])


def build_agent() -> Agent[None, str]:
    agent: Agent[None, str] = Agent(FunctionModel(reply), instructions="Answer briefly.")

    @agent.tool_plain
    def lookup(order_id: str) -> str:
        """The status of an order."""
        return f"{order_id}: shipped"

    return agent


def runner_turn(warm_runs: int) -> tuple[Callable[[int], Awaitable[None]], PydanticAiRunner[None]]:
    runner = PydanticAiRunner(build_agent(), stream=False, warm_runs=warm_runs)
    driver = RunnerDriver(runner, tool_policies={"lookup": ToolPolicy(effect="read")})

    async def turn(k: int) -> None:
        result = await driver.turn(f"question {k}")
        assert result.final.new_messages[-1].text == ANSWER

    return turn, runner


def alone_turn() -> Callable[[int], Awaitable[None]]:
    agent = build_agent()
    history: list[ModelMessage] = []

    async def turn(k: int) -> None:
        result = await agent.run(f"question {k}", message_history=history)
        assert result.output == ANSWER
        history.extend(result.new_messages())

    return turn


async def run(turns: int) -> None:
    cold, _ = runner_turn(0)
    warm, warm_runner = runner_turn(8)
    contenders = {"Pydantic AI alone": alone_turn(), "runner, cold": cold, "runner, warm": warm}
    cpu: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    for k in range(1, turns + 1):
        for name in names[k % len(names) :] + names[: k % len(names)]:
            freeze_harness()
            started = time.process_time()
            await contenders[name](k)
            cpu[name].append((time.process_time() - started) * 1000)
    windows = [(6, 15), (91, 110), (turns - 19, turns)]
    print(f"CPU per turn, median ms ({turns} turns; warm hits {warm_runner.warm_runs.hits})")
    print(f"{'':22}" + "".join(f"{f'turns {a}-{b}':>16}" for a, b in windows if b <= turns))
    for name in names:
        row = [statistics.median(cpu[name][a - 1 : b]) for a, b in windows if b <= turns]
        print(f"{name:22}" + "".join(f"{value:16.2f}" for value in row))
    for name in names[1:]:
        over = [
            statistics.median(cpu[name][a - 1 : b]) - statistics.median(cpu[names[0]][a - 1 : b])
            for a, b in windows
            if b <= turns
        ]
        print(f"{name + ' over alone':22}" + "".join(f"{value:16.2f}" for value in over))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=300)
    asyncio.run(run(parser.parse_args().turns))


if __name__ == "__main__":
    main()
