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
    # The application's names; the adapter interface's (dex_agents.runner) re-exported as before.
    from .client import (
        AgentClient,
        SyncAgentClient,
    )
    from .errors import (
        ChannelMessageNotFoundError,
        DatabaseError,
        DatabaseNotFoundError,
        DatabaseUnavailableError,
        DexAgentsError,
        FlowLoadError,
        FlowTypeNotHostedWarning,
        InvalidInputError,
        InvalidToolEffectError,
        MessageTooLargeError,
        NotFoundError,
        NotInToolStepError,
        RemoteRunnerError,
        RunnerUnavailableError,
        SchemaTooNewError,
        SessionExistsError,
        SessionNotFoundError,
        WorkerError,
        WorkerIdInUseError,
    )
    from .flow import (
        AgentSessionFlow,
        AgentSessionOptions,
        CompactionPolicy,
    )
    from .policy import (
        EFFECT_TABLE as EFFECT_TABLE,
    )
    from .policy import (
        resolve_tool_policy as resolve_tool_policy,
    )
    from .results import (
        model_visible_result as model_visible_result,
    )
    from .runner import (
        AgentFrameworkRunner as AgentFrameworkRunner,
    )
    from .runner import (
        AgentTurnContext as AgentTurnContext,
    )
    from .runner import (
        AgentTurnOutcome as AgentTurnOutcome,
    )
    from .runner import (
        ContextCompactionRunner as ContextCompactionRunner,
    )
    from .runner import (
        ContextSummaryRequest as ContextSummaryRequest,
    )
    from .runner import (
        ContextSummaryResult as ContextSummaryResult,
    )
    from .runner import (
        DeferredToolCall as DeferredToolCall,
    )
    from .runner import (
        DeferredToolExecution as DeferredToolExecution,
    )
    from .runner import (
        DeferredToolOutcome as DeferredToolOutcome,
    )
    from .runner import (
        EventWriter as EventWriter,
    )
    from .runner import (
        FrameworkItemCache as FrameworkItemCache,
    )
    from .runner import (
        FrameworkMessage as FrameworkMessage,
    )
    from .runner import (
        ModelCallMetadata as ModelCallMetadata,
    )
    from .runner import (
        PlanModeRunner as PlanModeRunner,
    )
    from .runner import (
        ToolCallsRequested as ToolCallsRequested,
    )
    from .runner import (
        ToolExecutionError,
        ToolPolicy,
    )
    from .runner import (
        ToolExecutionResult as ToolExecutionResult,
    )
    from .runner import (
        ToolInputRequested as ToolInputRequested,
    )
    from .runner import (
        ToolTaskCancellation as ToolTaskCancellation,
    )
    from .runner import (
        ToolTaskCanceller as ToolTaskCanceller,
    )
    from .runner import (
        ToolTaskPending as ToolTaskPending,
    )
    from .runner import (
        ToolTaskPoll as ToolTaskPoll,
    )
    from .runner import (
        ToolTaskPoller as ToolTaskPoller,
    )
    from .runner import (
        ToolTaskPollOutcome as ToolTaskPollOutcome,
    )
    from .runner import (
        ToolTaskStarted as ToolTaskStarted,
    )
    from .runner import (
        TurnCompleted as TurnCompleted,
    )
    from .runner import (
        TurnContinued as TurnContinued,
    )
    from .runner import (
        UnfinishedTurnMessageBuilder as UnfinishedTurnMessageBuilder,
    )
    from .runner import (
        WarmUpRunner as WarmUpRunner,
    )
    from .tool_context import (
        current_tool_execution,
    )
    from .types import (
        TurnResult,
        TurnStatus,
    )
    from .worker import (
        Worker,
    )

__version__ = "0.2.0"

# Each public name, and the module of this package that defines it.
_HOMES: dict[str, str] = {
    "AgentClient": "client",
    "SyncAgentClient": "client",
    "ChannelMessageNotFoundError": "errors",
    "DatabaseError": "errors",
    "DatabaseNotFoundError": "errors",
    "DatabaseUnavailableError": "errors",
    "DexAgentsError": "errors",
    "FlowLoadError": "errors",
    "FlowTypeNotHostedWarning": "errors",
    "InvalidInputError": "errors",
    "InvalidToolEffectError": "errors",
    "MessageTooLargeError": "errors",
    "NotFoundError": "errors",
    "NotInToolStepError": "errors",
    "RemoteRunnerError": "errors",
    "RunnerUnavailableError": "errors",
    "SchemaTooNewError": "errors",
    "SessionExistsError": "errors",
    "SessionNotFoundError": "errors",
    "WorkerError": "errors",
    "WorkerIdInUseError": "errors",
    "ChannelMessageNotFound": "errors",  # the old name of ChannelMessageNotFoundError
    "DatabaseNotFound": "errors",  # the old name of DatabaseNotFoundError
    "DatabaseUnavailable": "errors",  # the old name of DatabaseUnavailableError
    "InvalidInput": "errors",  # the old name of InvalidInputError
    "InvalidToolEffect": "errors",  # the old name of InvalidToolEffectError
    "MessageTooLarge": "errors",  # the old name of MessageTooLargeError
    "NotFound": "errors",  # the old name of NotFoundError
    "NotInToolStep": "errors",  # the old name of NotInToolStepError
    "RunnerUnavailable": "errors",  # the old name of RunnerUnavailableError
    "SchemaTooNew": "errors",  # the old name of SchemaTooNewError
    "SessionExists": "errors",  # the old name of SessionExistsError
    "SessionNotFound": "errors",  # the old name of SessionNotFoundError
    "WorkerIdInUse": "errors",  # the old name of WorkerIdInUseError
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


# What an application uses: the client, the flow and its options, the Worker, what a tool
# reads or raises, and the errors. The interface an adapter implements is `dex_agents.runner`
# (its names stay importable from here too, as before, but are not listed).
__all__ = [
    "AgentClient",
    "AgentSessionFlow",
    "AgentSessionOptions",
    "ChannelMessageNotFoundError",
    "CompactionPolicy",
    "DatabaseError",
    "DatabaseNotFoundError",
    "DatabaseUnavailableError",
    "DexAgentsError",
    "FlowLoadError",
    "FlowTypeNotHostedWarning",
    "InvalidInputError",
    "InvalidToolEffectError",
    "MessageTooLargeError",
    "NotFoundError",
    "NotInToolStepError",
    "RemoteRunnerError",
    "RunnerUnavailableError",
    "SchemaTooNewError",
    "SessionExistsError",
    "SessionNotFoundError",
    "SyncAgentClient",
    "ToolExecutionError",
    "ToolPolicy",
    "TurnResult",
    "TurnStatus",
    "Worker",
    "WorkerError",
    "WorkerIdInUseError",
    "current_tool_execution",
]
