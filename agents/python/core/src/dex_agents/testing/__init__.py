"""Test and demo helpers: a scripted model server, a scripted runner, real Worker and
server processes, an in-memory runner driver, and waits on a session. The adapters' spec
matrix is `dex_agents.testing.matrix` (it imports pytest)."""

from ..tool_context import current_tool_execution
from .anthropic_server import (
    AnthropicReply,
    AnthropicRequest,
    AnthropicToolUse,
    ScriptedAnthropicServer,
    anthropic_text,
    anthropic_tools,
)
from .driver import Decide, Decision, RecordingEvents, Reject, RunnerDriver, TurnResult
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
from .sessions import events_of, pending_interrupt, step_types, turns_done, wait_until
from .tool_log import ToolRunLog

__all__ = [
    "MODEL_URL_ENV",
    "AnthropicReply",
    "AnthropicRequest",
    "AnthropicToolUse",
    "Decide",
    "Decision",
    "RecordedRequest",
    "RecordingEvents",
    "Reject",
    "RunnerDriver",
    "ScriptedAnthropicServer",
    "ScriptedModelServer",
    "ScriptedReply",
    "ScriptedRunner",
    "ScriptedToolCall",
    "ScriptedUsage",
    "ServeProcess",
    "ToolRunLog",
    "TurnResult",
    "WorkerProcess",
    "anthropic_text",
    "anthropic_tools",
    "current_tool_execution",
    "events_of",
    "pending_interrupt",
    "reply_text",
    "reply_tools",
    "step_types",
    "turns_done",
    "wait_until",
]
