"""The Flow of bench_parked.py: it answers every message at once, with no tool call.

A turn is then the engine's work alone (the user message taken, one model Step, the answer
committed), so what bench_parked.py measures of a parked session's wake is the engine's.
A Worker process loads it with `dex-agents worker echo_app:flows` (run from this directory).
"""

from __future__ import annotations

import json

from dex_agents import AgentSessionFlow, FrameworkMessage, ToolExecutionResult, TurnCompleted
from dex_agents.runner import AgentTurnContext, DeferredToolExecution
from dex_agents.types import AgentUsage

FLOW_TYPE = "BenchEcho"


class EchoRunner:
    """Answers with the user's last text, no model latency and no tool."""

    def build_user_message(self, text: str) -> FrameworkMessage:
        return FrameworkMessage(role="user", text=text, framework_item=json.dumps(text))

    async def run_model_step(self, turn: AgentTurnContext) -> TurnCompleted:
        usage = AgentUsage(model_calls=1, input_tokens=1, output_tokens=1)
        answer = FrameworkMessage(role="assistant", text="echo", framework_item='"echo"')
        return TurnCompleted(new_messages=[answer], usage=usage)

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> ToolExecutionResult:
        raise AssertionError(
            f"the Echo Flow calls no tool, yet {call.tool_call.tool_name} was called"
        )


FLOW = AgentSessionFlow(EchoRunner(), flow_type=FLOW_TYPE)

flows = [FLOW]
