"""Durable OpenAI Agents SDK sessions: every model call and every tool call is a durable Step."""

from dex_agents import current_tool_execution

from .runner import ContextFactory, ModelResolver, OpenAIAgentsRunner, RunContextRequest
from .stream import HANDOFF_EVENT

__all__ = [
    "HANDOFF_EVENT",
    "ContextFactory",
    "ModelResolver",
    "OpenAIAgentsRunner",
    "RunContextRequest",
    "current_tool_execution",
]
