"""How a RunModel's runner work grows with the stored history (OpenAI Agents adapter).

Run from agents/python/core/bench: `uv sync --locked && uv run python openai_agents_history.py`.
Times `run_model_step` with an in-process model at several history lengths, for a turn's first
model call and for a call that resumes the turn after a tool call; the model call itself costs
nothing, so the figures are the adapter's (and the SDK's) own work.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, ModelSettings, RunConfig, function_tool
from agents.models.interface import Model, ModelProvider
from agents.tracing import set_tracing_disabled
from dex_agents_openai_agents import OpenAIAgentsRunner
from harness import freeze_harness
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseUsage,
)
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

from dex_agents.runner import AgentTurnContext, FrameworkItemCache, ToolCallsRequested
from dex_agents.types import AgentMessage, AgentToolCall


class InstantModel(Model):
    """Answers at once: a tool call when the last input is a user message, else text."""

    def _output(self, input: str | list[Any]) -> list[Any]:
        last = input[-1] if isinstance(input, list) and input else {}
        if isinstance(last, dict) and last.get("role") == "user" and "tool" in str(last):
            return [
                ResponseFunctionToolCall(
                    type="function_call",
                    call_id="call-new",
                    name="lookup",
                    arguments='{"key":"k"}',
                    id="fc-new",
                    status="completed",
                )
            ]
        text = ResponseOutputText(type="output_text", text="ok", annotations=[])
        return [
            ResponseOutputMessage(
                type="message", id="msg-new", role="assistant", status="completed", content=[text]
            )
        ]

    def _response(self, input: str | list[Any]) -> Response:
        usage = ResponseUsage(
            input_tokens=1,
            output_tokens=1,
            total_tokens=2,
            input_tokens_details=InputTokensDetails(cached_tokens=0, cache_write_tokens=0),
            output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
        )
        return Response(
            id="resp-1",
            created_at=0,
            model="instant",
            object="response",
            output=self._output(input),
            parallel_tool_calls=False,
            tool_choice="auto",
            tools=[],
            usage=usage,
        )

    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def stream_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> AsyncIterator[Any]:
        yield ResponseCompletedEvent(
            type="response.completed", response=self._response(input), sequence_number=0
        )


class Provider(ModelProvider):
    def get_model(self, model_name: str | None) -> Model:
        return InstantModel()


@function_tool
def lookup(key: str) -> str:
    """Looks a key up."""
    return key


def history(count: int) -> list[AgentMessage]:
    """`count` stored items: user, function call, function output, answer, repeated."""
    items: list[dict[str, Any]] = []
    index = 0
    while len(items) < count:
        items += [
            {"role": "user", "content": f"question {index} " * 20},
            {
                "type": "function_call",
                "call_id": f"c{index}",
                "name": "lookup",
                "arguments": json.dumps({"key": f"k{index}"}),
                "id": f"fc{index}",
                "status": "completed",
            },
            {
                "type": "function_call_output",
                "call_id": f"c{index}",
                "output": f"value {index} " * 30,
            },
            {
                "type": "message",
                "role": "assistant",
                "id": f"m{index}",
                "status": "completed",
                "content": [
                    {"type": "output_text", "text": f"answer {index} " * 30, "annotations": []}
                ],
            },
        ]
        index += 1
    items = [*items[: count - 1], {"role": "user", "content": "please use the tool"}]
    return [
        AgentMessage(
            sequence=sequence,
            turn_id=f"turn-{sequence // 4}",
            role="user" if item.get("role") == "user" else "assistant",
            framework_item=json.dumps(item),
            created_at="2026-01-01T00:00:00.000Z",
        )
        for sequence, item in enumerate(items, start=1)
    ]


# One memo for the session, as a Worker keeps beside its cached messages.
SESSION_ITEMS = FrameworkItemCache()


class Events:
    def write(self, type: str, payload: object) -> None:
        pass


def context(
    messages: list[AgentMessage],
    run_state: str | None = None,
    records: list[AgentToolCall] | None = None,
) -> AgentTurnContext:
    return AgentTurnContext(
        flow_id="session-1",
        turn_id="turn-x",
        attempt=1,
        step_execution_id="RunModel-1",
        messages=list(messages),
        framework_run_state=run_state,
        tool_calls=records or [],
        events=Events(),
        heartbeat=lambda: None,
        tool_policies={},
        default_tool_effect="read",
        framework_items=SESSION_ITEMS,
    )


def record(call_id: str) -> AgentToolCall:
    return AgentToolCall(
        tool_call_id=call_id,
        turn_id="turn-x",
        tool_name="lookup",
        arguments='{"key":"k"}',
        effect="read",
        requires_approval=False,
        status="succeeded",
        output="v",
        deferral_order=0,
    )


async def timed(runner: OpenAIAgentsRunner, make: Any, repeats: int) -> tuple[float, Any]:
    outcome = None
    for _ in range(3):
        outcome = await runner.run_model_step(make())
    freeze_harness()
    times = []
    for _ in range(repeats):
        start = time.process_time()
        outcome = await runner.run_model_step(make())
        times.append(time.process_time() - start)
    return statistics.median(times) * 1000, outcome


async def main() -> None:
    set_tracing_disabled(True)
    counts = [int(arg) for arg in sys.argv[1:]] or [10, 100, 1000]
    agent = Agent(
        name="helper",
        instructions="Answer briefly.",
        tools=[lookup],
        model_settings=ModelSettings(),
    )
    runner = OpenAIAgentsRunner(agent, run_config=RunConfig(model_provider=Provider()))
    for count in counts:
        stored = history(count)
        first, outcome = await timed(runner, lambda stored=stored: context(stored), 30)
        assert isinstance(outcome, ToolCallsRequested), outcome
        state = outcome.framework_run_state
        records = [record(call.tool_call_id) for call in outcome.tool_calls]
        resumed, _ = await timed(runner, lambda s=stored, r=state, c=records: context(s, r, c), 30)
        print(
            f"openai-agents {count:>6} stored messages: first call {first:7.2f} ms CPU, "
            f"resumed call {resumed:7.2f} ms, run state {len(state):>8} chars"
        )


if __name__ == "__main__":
    asyncio.run(main())
