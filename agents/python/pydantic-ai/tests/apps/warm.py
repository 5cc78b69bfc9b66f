"""The Worker app of the warm-run tests: `dex-agents worker tests.apps.warm:flows`.

The triage agent twice, with warm runs on (`WarmTriage`) and off (`ColdTriage`); after each
model step the runner writes how many model steps resumed a warm run so far to the tool-run
log, so a test can tell which path each step took.
"""

from __future__ import annotations

import os
from typing import Any

from dex_agents import AgentSessionFlow, AgentSessionOptions, ToolPolicy
from dex_agents.runner import AgentTurnContext, AgentTurnOutcome
from dex_agents.testing import MODEL_URL_ENV, ToolRunLog

from dex_agents_pydantic_ai import PydanticAiRunner

from .agents import AppDeps, build_triage_agent, deps_factory, scripted_model


class CountingRunner(PydanticAiRunner[AppDeps]):
    """Records the warm runs' hits after each model step."""

    async def run_model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome:
        outcome = await super().run_model_step(turn)
        ToolRunLog(os.environ["TOOL_LOG"]).record(
            "model_step", flow_id=turn.flow_id, warm_hits=self.warm_runs.hits
        )
        return outcome


def _flow(flow_type: str, warm_runs: int) -> AgentSessionFlow[Any]:
    model = scripted_model(os.environ[MODEL_URL_ENV])
    runner = CountingRunner(
        build_triage_agent(model),
        deps_factory=deps_factory(os.environ["TOOL_LOG"]),
        warm_runs=warm_runs,
    )
    options = AgentSessionOptions(tool_policies={"get_weather": ToolPolicy(effect="read")})
    return AgentSessionFlow(runner, flow_type=flow_type, options=options)


flows = [_flow("WarmTriage", 4), _flow("ColdTriage", 0)]
