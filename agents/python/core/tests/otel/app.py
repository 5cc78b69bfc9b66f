"""The traced tests' Worker app: the scripted runner with a read, an approved write, and a
deterministic compaction whose summary call reports its model call."""

from __future__ import annotations

import os
from collections.abc import Sequence

from dex_agents import AgentSessionFlow, AgentSessionOptions, CompactionPolicy, ToolPolicy
from dex_agents.runner import (
    AgentTurnContext,
    ContextSummaryRequest,
    ContextSummaryResult,
    ModelCallMetadata,
)
from dex_agents.testing import ScriptedRunner, ToolRunLog
from dex_agents.types import AgentUsage

LOG = ToolRunLog(os.environ.get("TOOL_LOG", "/tmp/dex-agents-tool-log.jsonl"))


def get_weather(city: str) -> dict[str, str]:
    """A read."""
    LOG.record("get_weather", city=city)
    return {"city": city, "forecast": "sunny"}


def send_email(to: str, body: str) -> str:
    """A write that needs approval."""
    LOG.record("send_email", to=to)
    return f"sent to {to}"


class CompactingRunner(ScriptedRunner):
    """100 tokens a message, cut at the end of the previous turn, summaries without a model
    server but with the metadata a real summary call reports."""

    def estimate_input_tokens(self, turn: AgentTurnContext) -> int:
        return 100 * len(turn.messages)

    def select_compaction_cutoff(
        self, turn: AgentTurnContext, retained_token_budget: int
    ) -> int | None:
        earlier = [m.sequence for m in turn.messages if m.turn_id != turn.turn_id]
        return max(earlier) if earlier else None

    async def summarize_context(self, request: ContextSummaryRequest) -> ContextSummaryResult:
        LOG.record("summarize", through=request.through_sequence)
        texts: Sequence[str] = [m.text or "" for m in request.messages if m.text]
        return ContextSummaryResult(
            text=" | ".join(texts),
            usage=AgentUsage(model_calls=1, input_tokens=7, output_tokens=3),
            model_call_metadata=ModelCallMetadata(
                request_model="summary-model",
                response_model="summary-model-1",
                provider_name="openai",
                response_id="summary-1",
                finish_reasons=("stop",),
            ),
        )


POLICIES = {
    "get_weather": ToolPolicy(effect="read"),
    "send_email": ToolPolicy(effect="non_idempotent_write", requires_approval=True),
}

flows = [
    AgentSessionFlow(
        CompactingRunner([get_weather, send_email]),
        flow_type="Traced",
        options=AgentSessionOptions(tool_policies=POLICIES),
    ),
    # Compacts from the third turn on (100 tokens a message, 340 of 400 trigger it).
    AgentSessionFlow(
        CompactingRunner([get_weather, send_email]),
        flow_type="Compacting",
        options=AgentSessionOptions(
            tool_policies=POLICIES, compaction=CompactionPolicy(context_window_tokens=400)
        ),
    ),
]
