"""A runner with defects, to show the session records them instead of losing anything."""

from __future__ import annotations

from typing import Any

from dex_agents import AgentSessionFlow, FrameworkMessage
from dex_agents.runner import AgentTurnContext, DeferredToolExecution


class InvalidOutcomeRunner:
    def build_user_message(self, text: str) -> FrameworkMessage:
        return FrameworkMessage(role="user", text=text, framework_item=text)

    async def run_model_step(self, turn: AgentTurnContext) -> Any:
        return "not an outcome"

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> Any:
        raise AssertionError("no tool is ever requested")


flows = [AgentSessionFlow(InvalidOutcomeRunner(), flow_type="Broken")]
