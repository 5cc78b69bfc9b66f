"""OpenTelemetry GenAI spans of a session's Steps (the `otel` extra: opentelemetry-api only).

The Step machine calls one narrow protocol, `StepTracer`: `activate` in the commit of a Step
that consumes an input from outside the session (the activation's `invoke_agent` root), and
`attempt` around each Execute (a `chat` or `execute_tool` span that ends with the attempt).
While the Execute runs its span is the running attempt (`running_attempt`), whose trace
context a call to a remote runner sends along (`trace_headers`), so the runner's spans are
children of the Step's. While tracing is off the Worker has no tracer: the Steps never call
one, nothing here loads opentelemetry, no request carries a trace context and no session
stores one. This module itself imports nothing of opentelemetry; `make_tracer` loads
`dex_agents.otel.tracer`, which does.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

    from ..stepkit import StepContext, StepTx

# Turns tracing on for a Worker that is not told (`Worker(tracing=None)`): 1, true, yes, on.
TRACING_ENV = "DEX_AGENTS_TRACING"
# Opt-in: message and tool call content on the spans (by reference only, by default). The
# variable the OpenTelemetry GenAI instrumentations read.
CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
# Which GenAI semantic conventions the attributes follow: "latest" (the default, the pinned
# semantic-conventions-genai commit) or "1.36.0" (the compatibility value).
SEMCONV_ENV = "DEX_AGENTS_OTEL_SEMCONV"

_TRUE = frozenset({"1", "true", "yes", "on"})


class AttemptSpan(Protocol):
    """The span of one Execute; `end` is called once, with its result or its error."""

    def end(self, result: object, error: BaseException | None) -> None: ...

    def trace_headers(self) -> dict[str, str]:
        """The headers that make a remote call's spans children of this span (W3C
        `traceparent`, `tracestate`); empty when it has none. Never raises."""
        ...


class StepTracer(Protocol):
    """What the Step machine calls while tracing is on. Neither method ever raises."""

    def activate(self, tx: StepTx) -> str | None:
        """Emits the activation's root span, stores its traceparent in the session's trace
        context (deletes it when the root has no valid context), and returns it."""
        ...

    def attempt(self, ctx: StepContext[Any]) -> AttemptSpan:
        """The span of the Execute about to run (a no-op for a Step type without one)."""
        ...


# The attempt whose Execute runs in this context (only set while tracing is on).
_RUNNING: ContextVar[AttemptSpan | None] = ContextVar("dex_agents_attempt_span", default=None)


@contextmanager
def running_attempt(span: AttemptSpan) -> Iterator[None]:
    """Makes `span` the running attempt for the code (and the tasks it starts) inside."""
    token = _RUNNING.set(span)
    try:
        yield
    finally:
        _RUNNING.reset(token)


def trace_headers() -> dict[str, str]:
    """The trace context headers of the running attempt, for a request to a remote runner;
    empty while tracing is off or outside a traced Execute."""
    span = _RUNNING.get()
    return {} if span is None else span.trace_headers()


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in _TRUE


def make_tracer(tracing: bool | TracerProvider | None) -> StepTracer | None:
    """The Worker's tracer: None when tracing is off (`False`, or `None` without
    DEX_AGENTS_TRACING); a TracerProvider, or the global one for `True`."""
    if tracing is None:
        tracing = env_flag(TRACING_ENV)
    if tracing is False:
        return None
    try:
        from .tracer import OtelStepTracer
    except ImportError as error:
        raise ImportError(
            "tracing is on but opentelemetry-api is not installed: install dex-agents[otel]"
        ) from error
    return OtelStepTracer(
        None if tracing is True else tracing,
        capture_content=env_flag(CAPTURE_CONTENT_ENV),
        semconv=os.environ.get(SEMCONV_ENV, "latest").strip() or "latest",
    )


__all__ = [
    "CAPTURE_CONTENT_ENV",
    "SEMCONV_ENV",
    "TRACING_ENV",
    "AttemptSpan",
    "StepTracer",
    "make_tracer",
    "running_attempt",
    "trace_headers",
]
