"""ToolSource: tools that a runner takes from outside the application's code (MCP servers).

A runner lists a source's tools before its model call, offers their definitions, asks the
source for each call's DeferredToolCall (policy and tool_source_reference), and hands the tool
Step's execution to the source that owns the record. Nothing here imports an MCP SDK.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from .runner import (
    DeferredToolCall,
    DeferredToolExecution,
    DeferredToolOutcome,
    PolicyResolver,
    ToolExecutionResult,
)
from .types import AgentToolCall


@runtime_checkable
class ToolSource(Protocol):
    async def list_tools(self, *, refresh: bool = False) -> Sequence[Any]: ...

    def tool_definitions(self) -> list[dict[str, Any]]:
        """Chat Completions definitions of the listed tools."""
        ...

    def has_tool(self, name: str) -> bool: ...

    def deferred_tool_call(
        self,
        tool_call_id: str,
        name: str,
        arguments: str,
        resolve: PolicyResolver | None = None,
    ) -> DeferredToolCall: ...

    def owns(self, record: AgentToolCall) -> bool:
        """Whether this source runs the record's call (from its reference, with no listing)."""
        ...

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> DeferredToolOutcome:
        """Runs the call. A source may return ToolTaskStarted only when
        `call.supports_tool_tasks` is set, and then also implements ToolTaskPoller (and
        optionally ToolTaskCanceller), which the runner calls for the records it owns."""
        ...


async def run_source_call(source: ToolSource, call: DeferredToolExecution) -> ToolExecutionResult:
    """A source's call in the tool Step of a runner that polls no tool tasks
    (`call.supports_tool_tasks` is off): the source waits for a task inside the Step, so any
    other outcome than a result is the source's defect."""
    outcome: object = await source.execute_deferred_tool_call(call)
    if not isinstance(outcome, ToolExecutionResult):
        raise TypeError(
            f"tool source {type(source).__name__} returned {type(outcome).__name__} for a "
            "runner that polls no tool tasks"
        )
    return outcome
