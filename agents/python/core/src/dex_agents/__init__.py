"""dex-agents: durable agent sessions. Every model call and every tool call is its own Step.

The public names load on first use (PEP 562): `import dex_agents` alone, as the `dex-agents`
command does before it knows which command runs, imports none of DBOS, SQLAlchemy or Pydantic,
so `dex-agents --help` answers at once. `from dex_agents import Worker` imports what `Worker`
needs, as before.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .client import AgentClient, SyncAgentClient
    from .errors import (
        ChannelMessageNotFound,
        DatabaseError,
        DatabaseNotFound,
        DatabaseUnavailable,
        DexAgentsError,
        FlowLoadError,
        FlowTypeNotHostedWarning,
        InvalidInput,
        MessageTooLarge,
        NotFound,
        NotInToolStep,
        RemoteRunnerError,
        RunnerUnavailable,
        SchemaTooNew,
        SessionExists,
        SessionNotFound,
        WorkerError,
        WorkerIdInUse,
    )
    from .flow import AgentSessionFlow, AgentSessionOptions, CompactionPolicy
    from .policy import EFFECT_TABLE, resolve_tool_policy
    from .results import model_visible_result
    from .runner import (
        AgentFrameworkRunner,
        AgentTurnContext,
        AgentTurnOutcome,
        ContextCompactionRunner,
        ContextSummaryRequest,
        ContextSummaryResult,
        DeferredToolCall,
        DeferredToolExecution,
        DeferredToolOutcome,
        EventWriter,
        FrameworkItemCache,
        FrameworkMessage,
        ModelCallMetadata,
        PlanModeRunner,
        ToolCallsRequested,
        ToolExecutionError,
        ToolExecutionResult,
        ToolInputRequested,
        ToolPolicy,
        ToolTaskCancellation,
        ToolTaskCanceller,
        ToolTaskPending,
        ToolTaskPoll,
        ToolTaskPoller,
        ToolTaskPollOutcome,
        ToolTaskStarted,
        TurnCompleted,
        TurnContinued,
        UnfinishedTurnMessageBuilder,
        WarmUpRunner,
    )
    from .tool_context import current_tool_execution
    from .types import TurnResult, TurnStatus
    from .worker import Worker

__version__ = "0.2.0"

# Each public name, and the module of this package that defines it.
_HOMES: dict[str, str] = {
    "AgentClient": "client",
    "SyncAgentClient": "client",
    "ChannelMessageNotFound": "errors",
    "DatabaseError": "errors",
    "DatabaseNotFound": "errors",
    "DatabaseUnavailable": "errors",
    "DexAgentsError": "errors",
    "FlowLoadError": "errors",
    "FlowTypeNotHostedWarning": "errors",
    "InvalidInput": "errors",
    "MessageTooLarge": "errors",
    "NotFound": "errors",
    "NotInToolStep": "errors",
    "RemoteRunnerError": "errors",
    "RunnerUnavailable": "errors",
    "SchemaTooNew": "errors",
    "SessionExists": "errors",
    "SessionNotFound": "errors",
    "WorkerError": "errors",
    "WorkerIdInUse": "errors",
    "AgentSessionFlow": "flow",
    "AgentSessionOptions": "flow",
    "CompactionPolicy": "flow",
    "EFFECT_TABLE": "policy",
    "resolve_tool_policy": "policy",
    "model_visible_result": "results",
    "AgentFrameworkRunner": "runner",
    "AgentTurnContext": "runner",
    "AgentTurnOutcome": "runner",
    "ContextCompactionRunner": "runner",
    "ContextSummaryRequest": "runner",
    "ContextSummaryResult": "runner",
    "DeferredToolCall": "runner",
    "DeferredToolExecution": "runner",
    "DeferredToolOutcome": "runner",
    "EventWriter": "runner",
    "FrameworkItemCache": "runner",
    "FrameworkMessage": "runner",
    "ModelCallMetadata": "runner",
    "PlanModeRunner": "runner",
    "ToolCallsRequested": "runner",
    "ToolExecutionError": "runner",
    "ToolExecutionResult": "runner",
    "ToolInputRequested": "runner",
    "ToolPolicy": "runner",
    "ToolTaskCancellation": "runner",
    "ToolTaskCanceller": "runner",
    "ToolTaskPending": "runner",
    "ToolTaskPoll": "runner",
    "ToolTaskPoller": "runner",
    "ToolTaskPollOutcome": "runner",
    "ToolTaskStarted": "runner",
    "TurnCompleted": "runner",
    "TurnContinued": "runner",
    "UnfinishedTurnMessageBuilder": "runner",
    "WarmUpRunner": "runner",
    "current_tool_execution": "tool_context",
    "TurnResult": "types",
    "TurnStatus": "types",
    "Worker": "worker",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])


__all__ = [
    "EFFECT_TABLE",
    "AgentClient",
    "AgentFrameworkRunner",
    "AgentSessionFlow",
    "AgentSessionOptions",
    "AgentTurnContext",
    "AgentTurnOutcome",
    "ChannelMessageNotFound",
    "CompactionPolicy",
    "ContextCompactionRunner",
    "ContextSummaryRequest",
    "ContextSummaryResult",
    "DatabaseError",
    "DatabaseNotFound",
    "DatabaseUnavailable",
    "DeferredToolCall",
    "DeferredToolExecution",
    "DeferredToolOutcome",
    "DexAgentsError",
    "EventWriter",
    "FlowLoadError",
    "FlowTypeNotHostedWarning",
    "FrameworkItemCache",
    "FrameworkMessage",
    "InvalidInput",
    "MessageTooLarge",
    "ModelCallMetadata",
    "NotFound",
    "NotInToolStep",
    "PlanModeRunner",
    "RemoteRunnerError",
    "RunnerUnavailable",
    "SchemaTooNew",
    "SessionExists",
    "SessionNotFound",
    "SyncAgentClient",
    "ToolCallsRequested",
    "ToolExecutionError",
    "ToolExecutionResult",
    "ToolInputRequested",
    "ToolPolicy",
    "ToolTaskCancellation",
    "ToolTaskCanceller",
    "ToolTaskPending",
    "ToolTaskPoll",
    "ToolTaskPollOutcome",
    "ToolTaskPoller",
    "ToolTaskStarted",
    "TurnCompleted",
    "TurnContinued",
    "TurnResult",
    "TurnStatus",
    "UnfinishedTurnMessageBuilder",
    "WarmUpRunner",
    "Worker",
    "WorkerError",
    "WorkerIdInUse",
    "current_tool_execution",
    "model_visible_result",
    "resolve_tool_policy",
]
