"""Durable Pydantic AI agents: every model call and every tool call is its own durable Step."""

from __future__ import annotations

from dex_agents import current_tool_execution

from .runner import DepsContext, DepsFactory, ModelResolver, PydanticAiRunner

__all__ = [
    "DepsContext",
    "DepsFactory",
    "ModelResolver",
    "PydanticAiRunner",
    "current_tool_execution",
]
