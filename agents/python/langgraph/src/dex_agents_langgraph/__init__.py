"""Durable LangChain agents: every model call and every tool call is a durable Step."""

from dex_agents import current_tool_execution

from .checkpoint import TurnCheckpointSaver
from .deferral import UnsupportedGraphError
from .runner import LangGraphRunner

__all__ = [
    "LangGraphRunner",
    "TurnCheckpointSaver",
    "UnsupportedGraphError",
    "current_tool_execution",
]
