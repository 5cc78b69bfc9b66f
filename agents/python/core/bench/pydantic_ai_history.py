"""How a RunModel's runner work grows with the stored history (Pydantic AI adapter).

Run from agents/python/core/bench: `uv sync --locked && uv run python pydantic_ai_history.py`.
Times `run_model_step` with an in-process model at several history lengths; the model call
itself costs nothing, so the figures are the adapter's and Pydantic AI's own work. Also
times the part that is the adapter's alone: the history it hands the run, from the session's
memo (`AgentTurnContext.folded`).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime

from dex_agents_pydantic_ai import PydanticAiRunner
from dex_agents_pydantic_ai.messages import extend_history, to_framework_messages
from harness import freeze_harness
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCalls, FunctionModel

from dex_agents.runner import AgentTurnContext, FrameworkItemCache, FrameworkMessage
from dex_agents.testing.driver import stored_message
from dex_agents.types import AgentMessage


def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart("ok")])


async def stream_answer(
    messages: list[ModelMessage], info: AgentInfo
) -> AsyncIterator[str | DeltaToolCalls]:
    yield "ok"


def build_agent() -> Agent[None, str]:
    agent = Agent(
        FunctionModel(answer, stream_function=stream_answer),
        system_prompt="You help.",
        instructions="Answer briefly.",
    )

    @agent.tool_plain
    def lookup(key: str) -> str:
        """Looks a key up."""
        return key

    return agent


def history(count: int) -> list[AgentMessage]:
    """`count` stored messages: user, tool call, tool return, answer, repeated."""
    now = datetime.now(UTC)
    framework: list[FrameworkMessage] = []
    index = 0
    while len(framework) < count:
        native: list[ModelMessage] = [
            ModelRequest(parts=[UserPromptPart(f"question {index} " * 20, timestamp=now)]),
            ModelResponse(
                parts=[ToolCallPart("lookup", {"key": f"k{index}"}, f"call-{index}")],
                timestamp=now,
                model_name="function:answer",
            ),
            ModelRequest(parts=[ToolReturnPart("lookup", f"value {index} " * 30, f"call-{index}")]),
            ModelResponse(parts=[TextPart(f"answer {index} " * 30)], timestamp=now),
        ]
        framework.extend(to_framework_messages(native))
        index += 1
    return [
        stored_message(message, sequence, f"turn-{sequence // 4}")
        for sequence, message in enumerate(framework[:count], start=1)
    ]


# One memo for the session, as a Worker keeps beside its cached messages.
SESSION_ITEMS = FrameworkItemCache()


class Events:
    def write(self, type: str, payload: object) -> None:
        pass


def context(messages: list[AgentMessage], step: int) -> AgentTurnContext:
    return AgentTurnContext(
        flow_id="session-1",
        turn_id="turn-x",
        attempt=1,
        step_execution_id=f"RunModel-{step}",
        messages=list(messages),
        framework_run_state=None,
        tool_calls=[],
        events=Events(),
        heartbeat=lambda: None,
        tool_policies={},
        default_tool_effect="read",
        framework_items=SESSION_ITEMS,
    )


async def measure(runner: PydanticAiRunner[None], count: int, repeats: int) -> float:
    stored = history(count)
    # The last stored message is the turn's user message.
    stored[-1] = stored[-1].model_copy(
        update={"framework_item": runner.build_user_message("hi").framework_item, "role": "user"}
    )
    for step in range(3):  # warm up, and let any per-session cache fill
        await runner.run_model_step(context(stored, step))
    freeze_harness()
    times = []
    for step in range(repeats):
        start = time.process_time()
        await runner.run_model_step(context(stored, step))
        times.append(time.process_time() - start)
    return statistics.median(times) * 1000


def measure_history(count: int, repeats: int) -> float:
    """The history a run is handed, once the session's memo holds the stored messages."""
    turn = context(history(count), 0)
    turn.folded(extend_history).for_run()
    freeze_harness()
    times = []
    for _ in range(repeats):
        start = time.process_time()
        turn.folded(extend_history).for_run()
        times.append(time.process_time() - start)
    return statistics.median(times) * 1000


async def main() -> None:
    counts = [int(arg) for arg in sys.argv[1:]] or [10, 100, 1000]
    runner = PydanticAiRunner(build_agent())
    for count in counts:
        ms = await measure(runner, count, repeats=30 if count <= 1000 else 5)
        handed = measure_history(count, repeats=30)
        print(
            f"pydantic-ai  {count:>6} stored messages: {ms:7.2f} ms CPU per run_model_step, "
            f"of which {handed:.3f} ms the history it hands the run"
        )


if __name__ == "__main__":
    asyncio.run(main())
