"""Durable Pydantic AI agents: every model call and every tool call is its own durable Step."""

from __future__ import annotations

from .runner import DepsContext, DepsFactory, PydanticAiRunner
from .tool_step import current_tool_execution

__all__ = [
    "DepsContext",
    "DepsFactory",
    "PydanticAiRunner",
    "current_tool_execution",
]
