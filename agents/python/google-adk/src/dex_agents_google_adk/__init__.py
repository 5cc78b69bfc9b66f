"""Durable Google ADK agents: every model call and every tool call is a durable Step."""

from dex_agents import current_tool_execution

from .gate import GatedTool, GatedToolset, UnsupportedAgentError
from .runner import AdkRunner

__all__ = [
    "AdkRunner",
    "GatedTool",
    "GatedToolset",
    "UnsupportedAgentError",
    "current_tool_execution",
]
