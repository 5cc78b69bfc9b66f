"""Durable Google ADK agents: every model call and every tool call is a durable Step."""

from dex_agents import current_tool_execution

from .gate import GatedTool, GatedToolset, UnsupportedAgentError
from .runner import AdkRunner
from .session_features import SESSION_SETTINGS_STATE_KEY, SETTING_STATE_PREFIX, ModelResolver

__all__ = [
    "SESSION_SETTINGS_STATE_KEY",
    "SETTING_STATE_PREFIX",
    "AdkRunner",
    "GatedTool",
    "GatedToolset",
    "ModelResolver",
    "UnsupportedAgentError",
    "current_tool_execution",
]
