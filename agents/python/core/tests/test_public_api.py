"""The two public interfaces, name by name: `dex_agents` for applications, `dex_agents.runner`
for adapter authors. A name added, removed or moved between them fails here, so a change to
either is a decision, not an accident. Every exception either one exports is a DexAgentsError."""

from __future__ import annotations

import dex_agents
from dex_agents import runner

APPLICATION = {
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
}
ADAPTER = {
    "AgentFrameworkRunner",
    "AgentTurnContext",
    "AgentTurnOutcome",
    "BuiltInToolName",
    "ContextCompactionRunner",
    "ContextSummaryRequest",
    "ContextSummaryResult",
    "DeferredToolCall",
    "DeferredToolExecution",
    "DeferredToolOutcome",
    "EventWriter",
    "FrameworkItemCache",
    "FrameworkMessage",
    "ModelCallMetadata",
    "PlanModeRunner",
    "PolicyResolver",
    "ToolCallsRequested",
    "ToolExecutionError",
    "ToolExecutionResult",
    "ToolInputRequested",
    "ToolPolicy",
    "ToolStepsReadTurn",
    "ToolTaskCancellation",
    "ToolTaskCanceller",
    "ToolTaskPending",
    "ToolTaskPoll",
    "ToolTaskPollOutcome",
    "ToolTaskPoller",
    "ToolTaskStarted",
    "TurnCompleted",
    "TurnContinued",
    "UnfinishedTurnMessageBuilder",
    "WarmUpRunner",
    "earliest_cut_within_budget",
    "messages_left_out",
}


def test_an_application_imports_its_names_from_the_package() -> None:
    assert set(dex_agents.__all__) == APPLICATION
    assert all(getattr(dex_agents, name) is not None for name in APPLICATION)


def test_an_adapter_author_imports_the_runner_interface_from_dex_agents_runner() -> None:
    assert set(runner.__all__) == ADAPTER
    assert all(getattr(runner, name) is not None for name in ADAPTER)
    # As before the split, the package still gives the interface's names.
    assert dex_agents.AgentTurnContext is runner.AgentTurnContext


def test_every_exported_exception_is_a_dex_agents_error() -> None:
    exported = [getattr(dex_agents, n) for n in APPLICATION] + [getattr(runner, n) for n in ADAPTER]
    errors = [e for e in exported if isinstance(e, type) and issubclass(e, BaseException)]
    assert errors, "no exception exported"
    for error in errors:
        assert issubclass(error, dex_agents.DexAgentsError | Warning), error
        assert error.__name__.endswith(("Error", "Warning")), error


def test_an_error_keeps_its_name_from_before_the_naming_rule() -> None:
    assert dex_agents.InvalidInput is dex_agents.InvalidInputError
    assert dex_agents.SessionNotFound is dex_agents.SessionNotFoundError
    assert dex_agents.RunnerUnavailable is dex_agents.RunnerUnavailableError
