"""The engine-only Flow of bench_core.py and bench_scale.py: an instant model, one read tool.

A Worker process loads it with `dex-agents worker instant_app:flows` (run from this
directory); bench_core.py runs it in-process.
"""

from __future__ import annotations

import json
from typing import Any

from dex_agents import (
    AgentSessionFlow,
    AgentSessionOptions,
    DeferredToolCall,
    FrameworkMessage,
    ToolCallsRequested,
    ToolExecutionResult,
    ToolPolicy,
    TurnCompleted,
)
from dex_agents.runner import AgentTurnContext, DeferredToolExecution
from dex_agents.types import AgentUsage

FLOW_TYPE = "Bench"


class InstantRunner:
    """One read tool per turn, no model latency: everything measured is the engine's."""

    def build_user_message(self, text: str) -> FrameworkMessage:
        return FrameworkMessage(role="user", text=text, framework_item=json.dumps(text))

    async def run_model_step(self, turn: AgentTurnContext) -> Any:
        usage = AgentUsage(model_calls=1, input_tokens=1, output_tokens=1)
        if turn.framework_run_state is None:
            call = DeferredToolCall("call-1", "lookup", "{}")
            return ToolCallsRequested(framework_run_state="{}", tool_calls=[call], usage=usage)
        answer = FrameworkMessage(role="assistant", text="ok", framework_item='"ok"')
        return TurnCompleted(new_messages=[answer], usage=usage)

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> ToolExecutionResult:
        return ToolExecutionResult("42")


FLOW = AgentSessionFlow(
    InstantRunner(),
    flow_type=FLOW_TYPE,
    options=AgentSessionOptions(tool_policies={"lookup": ToolPolicy(effect="read")}),
)

flows = [FLOW]
