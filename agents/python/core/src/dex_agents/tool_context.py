"""The tool call a tool Step is running, for code inside the tool (its idempotency key).

The core's tool Steps (CallTool, CallSingleAttemptTool) set it around the runner's
`execute_deferred_tool_call`, so it is the same for every runner: Stepwise and the adapters
re-export this function.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

from .errors import NotInToolStepError
from .runner import DeferredToolExecution

_current: contextvars.ContextVar[DeferredToolExecution] = contextvars.ContextVar(
    "dex_agents_tool_execution"
)


def current_tool_execution() -> DeferredToolExecution:
    """The DeferredToolExecution of the running tool Step: its idempotency key (the same on
    every attempt), the tool call record, answers to the tool's questions.

    Raises NotInToolStepError (a LookupError) anywhere else, such as in a tool the framework runs
    on its own, outside dex-agents."""
    try:
        return _current.get()
    except LookupError:
        raise NotInToolStepError(
            "current_tool_execution() is only available inside a tool call that dex-agents "
            "runs as a tool Step (CallTool or CallSingleAttemptTool)"
        ) from None


@contextmanager
def running_tool(execution: DeferredToolExecution) -> Iterator[None]:
    token = _current.set(execution)
    try:
        yield
    finally:
        _current.reset(token)
