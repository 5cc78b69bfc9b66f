"""Context variables that connect the SDK's tool invocations to the dex-agents Step running them.

RunModel sets the recorded results of the turn's final tool calls, so a gated tool answers an
approved call with its recorded result instead of running. A tool Step sets the current
execution, so the real tool can read its idempotency key.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

from dex_agents.runner import DeferredToolExecution

_recorded_results: ContextVar[Mapping[str, str] | None] = ContextVar(
    "dex_openai_agents_recorded_results", default=None
)
_current_execution: ContextVar[DeferredToolExecution | None] = ContextVar(
    "dex_openai_agents_current_execution", default=None
)


class MissingRecordedResultError(RuntimeError):
    """A gated tool was invoked for a call that has no final dex-agents record."""


def current_tool_execution() -> DeferredToolExecution | None:
    """The dex-agents tool Step running the current tool, or None outside a tool Step.

    Its `idempotency_key` (`<flowId>/<turnId>/<toolCallId>`) is the same on every attempt.
    """
    return _current_execution.get()


@contextmanager
def running_tool(execution: DeferredToolExecution) -> Iterator[None]:
    token = _current_execution.set(execution)
    try:
        yield
    finally:
        _current_execution.reset(token)


@contextmanager
def recorded_results(results: Mapping[str, str]) -> Iterator[None]:
    """Model-visible results by tool call ID, for the gated tools of one model Step."""
    token = _recorded_results.set(dict(results))
    try:
        yield
    finally:
        _recorded_results.reset(token)


def recorded_result(tool_call_id: str) -> str:
    result = (_recorded_results.get() or {}).get(tool_call_id)
    if result is None:
        raise MissingRecordedResultError(
            f"tool call {tool_call_id!r} was approved without a final dex-agents record"
        )
    return result
