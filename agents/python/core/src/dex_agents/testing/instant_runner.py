"""A runner whose model and tool answer at once: one read tool call per turn, then an answer,
streamed as a model streams it (two text deltas).

What a turn of it costs is the engine's own work, so the engine's benchmarks (bench/) and the
test that counts a turn's transactions run it.
"""

from __future__ import annotations

import asyncio
import json

from ..flow import AgentSessionFlow, AgentSessionOptions
from ..policy import ToolPolicy
from ..runner import (
    AgentTurnContext,
    DeferredToolCall,
    DeferredToolExecution,
    FrameworkMessage,
    ToolCallsRequested,
    ToolExecutionResult,
    TurnCompleted,
)
from ..types import AgentUsage

ANSWER_DELTAS = ("o", "k")


class InstantRunner:
    """One read tool call (`lookup`) per turn, then the answer `ok`, its text streamed as two
    deltas; nothing waited for."""

    def build_user_message(self, text: str) -> FrameworkMessage:
        return FrameworkMessage(role="user", text=text, framework_item=json.dumps(text))

    async def run_model_step(self, turn: AgentTurnContext) -> ToolCallsRequested | TurnCompleted:
        usage = AgentUsage(model_calls=1, input_tokens=1, output_tokens=1)
        if turn.framework_run_state is None:
            call = DeferredToolCall("call-1", "lookup", "{}")
            return ToolCallsRequested(framework_run_state="{}", tool_calls=[call], usage=usage)
        for delta in ANSWER_DELTAS:
            await asyncio.sleep(0)  # a stream's chunks arrive on turns of the event loop
            turn.events.write("text_delta", {"text": delta})
        answer = FrameworkMessage(role="assistant", text="ok", framework_item='"ok"')
        return TurnCompleted(new_messages=[answer], usage=usage)

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> ToolExecutionResult:
        return ToolExecutionResult("42")


def instant_flow(flow_type: str) -> AgentSessionFlow:
    """A Flow of `InstantRunner`, its tool a read."""
    return AgentSessionFlow(
        InstantRunner(),
        flow_type=flow_type,
        options=AgentSessionOptions(tool_policies={"lookup": ToolPolicy(effect="read")}),
    )
