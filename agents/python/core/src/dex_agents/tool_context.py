"""The tool call a tool Step is running, for code inside the tool (its idempotency key)."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

from .runner import DeferredToolExecution

_current: contextvars.ContextVar[DeferredToolExecution] = contextvars.ContextVar(
    "dex_agents_tool_execution"
)


def current_tool_execution() -> DeferredToolExecution:
    """The DeferredToolExecution of the running tool Step, with its idempotency key.
    Raises LookupError outside a tool Step."""
    return _current.get()


@contextmanager
def running_tool(execution: DeferredToolExecution) -> Iterator[None]:
    token = _current.set(execution)
    try:
        yield
    finally:
        _current.reset(token)
