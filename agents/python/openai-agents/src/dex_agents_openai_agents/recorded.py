"""The context variable that connects the SDK's tool invocations to the RunModel Step running
them: RunModel sets the recorded results of the turn's final tool calls, so a gated tool answers
an approved call with its recorded result instead of running. (A tool Step's own execution,
with its idempotency key, is the core's `current_tool_execution()`.)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

_recorded_results: ContextVar[Mapping[str, str] | None] = ContextVar(
    "dex_openai_agents_recorded_results", default=None
)


class MissingRecordedResultError(RuntimeError):
    """A gated tool was invoked for a call that has no final dex-agents record."""


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
