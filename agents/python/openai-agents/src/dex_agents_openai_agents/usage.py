"""The SDK's run usage as dex-agents AgentUsage."""

from __future__ import annotations

from agents import Usage
from dex_agents.types import AgentUsage


def run_usage(usage: Usage) -> AgentUsage:
    """The cumulative usage of a run, which a resumed RunState carries on."""
    return AgentUsage(
        model_calls=usage.requests,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cached_input_tokens=usage.input_tokens_details.cached_tokens or 0,
        reasoning_tokens=usage.output_tokens_details.reasoning_tokens or 0,
    )


def usage_since(total: AgentUsage, earlier: AgentUsage) -> AgentUsage:
    """What one Step added to a run whose usage was `earlier` when the Step began."""
    return AgentUsage(
        model_calls=total.model_calls - earlier.model_calls,
        input_tokens=total.input_tokens - earlier.input_tokens,
        output_tokens=total.output_tokens - earlier.output_tokens,
        cached_input_tokens=total.cached_input_tokens - earlier.cached_input_tokens,
        reasoning_tokens=total.reasoning_tokens - earlier.reasoning_tokens,
    )
