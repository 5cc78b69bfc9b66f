"""A Worker app with the built-in tools, plan mode and compaction, on the scripted runner."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from dex_agents import AgentSessionFlow, AgentSessionOptions, CompactionPolicy, ToolPolicy, parking
from dex_agents.builtins import build_plan_note
from dex_agents.runner import (
    AgentTurnContext,
    ContextSummaryRequest,
    ContextSummaryResult,
)
from dex_agents.testing import ScriptedRunner, ToolRunLog
from dex_agents.types import AgentUsage

LOG = ToolRunLog(os.environ.get("TOOL_LOG", "/tmp/dex-agents-tool-log.jsonl"))
if "DUE_RESCAN_SECONDS" in os.environ:
    # A test that must see a due time reach a running Worker by its park's wake-up, not by
    # the loop's periodic look.
    parking.DUE_RESCAN_SECONDS = float(os.environ["DUE_RESCAN_SECONDS"])
SUMMARY_PREFIX = "[Dex] Summary of the earlier conversation:"


def get_weather(city: str) -> dict[str, str]:
    """A read."""
    LOG.record("get_weather", city=city)
    return {"city": city, "forecast": "sunny"}


class PlanningRunner(ScriptedRunner):
    """ScriptedRunner plus plan notes and a deterministic compaction capability: 100 tokens
    a message, cut at the end of the previous turn, summaries written without a model."""

    supports_plan_mode = True

    def _history(self, turn: AgentTurnContext) -> list[dict[str, Any]]:
        history = super()._history(turn)
        prefix: list[dict[str, Any]] = []
        if turn.context_summary is not None:
            text = f"{SUMMARY_PREFIX}\n{turn.context_summary.text}"
            prefix.append({"role": "user", "content": text})
        if turn.session_settings:
            settings = json.dumps(dict(turn.session_settings), sort_keys=True)
            prefix.append({"role": "system", "content": f"settings: {settings}"})
        note = build_plan_note(turn.plan, turn.interaction_mode)
        if note is not None:
            prefix.append({"role": "user", "content": note})
        return prefix + history

    def estimate_input_tokens(self, turn: AgentTurnContext) -> int:
        return 100 * len(turn.messages)

    def select_compaction_cutoff(
        self, turn: AgentTurnContext, retained_token_budget: int
    ) -> int | None:
        earlier = [m.sequence for m in turn.messages if m.turn_id != turn.turn_id]
        return max(earlier) if earlier else None

    async def summarize_context(self, request: ContextSummaryRequest) -> ContextSummaryResult:
        LOG.record("summarize", through=request.through_sequence, attempt=request.attempt)
        await asyncio.sleep(float(os.environ.get("SUMMARY_SECONDS", "0")))
        previous = request.previous_summary.text + " " if request.previous_summary else ""
        texts: Sequence[str] = [m.text or "" for m in request.messages if m.text]
        usage = AgentUsage(model_calls=1, input_tokens=7, output_tokens=3)
        return ContextSummaryResult(text=previous + " | ".join(texts), usage=usage)


def options(**extra: Any) -> AgentSessionOptions:
    return AgentSessionOptions(
        tool_policies={"get_weather": ToolPolicy(effect="read")},
        built_in_tools=("ask_user", "durable_wait", "write_todos"),
        plan_mode_enabled=True,
        max_durable_wait=timedelta(hours=1),
        **extra,
    )


flows = [
    AgentSessionFlow(PlanningRunner([get_weather]), flow_type="Planner", options=options()),
    AgentSessionFlow(
        PlanningRunner([get_weather]),
        flow_type="Compacting",
        options=options(
            compaction=CompactionPolicy(context_window_tokens=1000), retained_message_limit=3
        ),
    ),
]
