"""Test and demo helpers: a scripted model server, a scripted runner, real Worker and
server processes."""

from ..tool_context import current_tool_execution
from .model_server import (
    RecordedRequest,
    ScriptedModelServer,
    ScriptedReply,
    ScriptedToolCall,
    ScriptedUsage,
    reply_text,
    reply_tools,
)
from .processes import ServeProcess, WorkerProcess
from .scripted_runner import MODEL_URL_ENV, ScriptedRunner
from .tool_log import ToolRunLog

__all__ = [
    "MODEL_URL_ENV",
    "RecordedRequest",
    "ScriptedModelServer",
    "ScriptedReply",
    "ScriptedRunner",
    "ScriptedToolCall",
    "ScriptedUsage",
    "ServeProcess",
    "ToolRunLog",
    "WorkerProcess",
    "current_tool_execution",
    "reply_text",
    "reply_tools",
]
