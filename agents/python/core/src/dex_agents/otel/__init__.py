"""OpenTelemetry GenAI spans of a session's Steps (the `otel` extra: opentelemetry-api only).

The Step machine calls one narrow protocol, `StepTracer`: `activate` in the commit of a Step
that consumes an input from outside the session (the activation's `invoke_agent` root), and
`attempt` around each Execute (a `chat` or `execute_tool` span that ends with the attempt).
While tracing is off the Worker has no tracer: the Steps never call one, nothing here loads
opentelemetry, and no session stores a trace context. This module itself imports nothing of
opentelemetry; `make_tracer` loads `dex_agents.otel.tracer`, which does.
"""

from __future__ import annotations

import os
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


class StepTracer(Protocol):
    """What the Step machine calls while tracing is on. Neither method ever raises."""

    def activate(self, tx: StepTx) -> str | None:
        """Emits the activation's root span, stores its traceparent in the session's trace
        context (deletes it when the root has no valid context), and returns it."""
        ...

    def attempt(self, ctx: StepContext[Any]) -> AttemptSpan:
        """The span of the Execute about to run (a no-op for a Step type without one)."""
        ...


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
]
