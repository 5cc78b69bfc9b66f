"""Durable Google ADK agents: every model call and every tool call is a durable Step."""

from dex_agents import current_tool_execution

from .artifacts import MAX_ARTIFACT_BYTES, ArtifactTooLargeError, StepArtifactService
from .gate import GatedTool, GatedToolset, UnsupportedAgentError
from .runner import AdkRunner
from .session_features import SESSION_SETTINGS_STATE_KEY, SETTING_STATE_PREFIX, ModelResolver
from .transfers import TRANSFER_EVENT

__all__ = [
    "MAX_ARTIFACT_BYTES",
    "SESSION_SETTINGS_STATE_KEY",
    "SETTING_STATE_PREFIX",
    "TRANSFER_EVENT",
    "AdkRunner",
    "ArtifactTooLargeError",
    "GatedTool",
    "GatedToolset",
    "ModelResolver",
    "StepArtifactService",
    "UnsupportedAgentError",
    "current_tool_execution",
]
