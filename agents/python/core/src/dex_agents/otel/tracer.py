"""The OpenTelemetry `StepTracer`: the spans, built through the OpenTelemetry API only.

Every span ends inside the Step attempt that emits it: the `invoke_agent` root in its Step's
commit, a `chat` or `execute_tool` span when its Execute ends (created then, with the
attempt's start as its start time), so no span stays open across a durable wait. A remote
runner's call needs the span's context while the Execute runs: asked for it, the attempt
starts its span then (from the attempt's start), and names it and sets its attributes when it
ends. An OpenTelemetry error is logged and its span skipped: tracing never fails or retries a
Step.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode, TracerProvider
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from ..runner import ContextSummaryResult, ToolCallsRequested, TurnCompleted, TurnContinued
from ..steps.tools import LoadedCall
from ..types import AgentToolCall
from . import attributes as attrs

if TYPE_CHECKING:
    from ..stepkit import StepContext, StepTx
    from . import AttemptSpan

log = logging.getLogger("dex_agents.otel")

_MODEL_OUTCOMES = (TurnCompleted, ToolCallsRequested, TurnContinued, ContextSummaryResult)
_CHAT_STEPS = frozenset({"RunModel", "CompactContext"})
_TOOL_STEPS = frozenset({"CallTool", "CallSingleAttemptTool", "PollToolTask"})
_PROPAGATOR = TraceContextTextMapPropagator()


class OtelStepTracer:
    """A Worker's StepTracer; `provider` None means the global TracerProvider."""

    def __init__(
        self,
        provider: TracerProvider | None,
        *,
        capture_content: bool = False,
        semconv: str = attrs.LATEST,
    ) -> None:
        self.conventions = attrs.Conventions.named(semconv)
        self.capture_content = capture_content
        self._tracer = trace.get_tracer(
            "dex_agents",
            _version(),
            tracer_provider=provider,
            schema_url=self.conventions.schema_url,
        )

    # StepTracer -----------------------------------------------------------------------------

    def activate(self, tx: StepTx) -> str | None:
        try:
            root = self._emit_root(tx)
        except Exception:
            log.exception("tracing: skipped the invoke_agent span of %s", tx.ctx.step_execution_id)
            return None
        # The stored value is written only when it changes: a session that never had a
        # valid root keeps none.
        if root != tx.session.trace_context:
            tx.session.trace_context = root
        return root

    def attempt(self, ctx: StepContext[Any]) -> AttemptSpan:
        if ctx.step_type in _CHAT_STEPS or ctx.step_type in _TOOL_STEPS:
            return _Attempt(self, ctx, time.time_ns())
        return _NO_SPAN

    # Spans ----------------------------------------------------------------------------------

    def _emit_root(self, tx: StepTx) -> str | None:
        ctx, state = tx.ctx, tx.session.state
        previous = _span_context(tx.session.trace_context)
        attributes = attrs.common(ctx, state.active_turn_id if state else None)
        attributes.update(attrs.invoke_agent(ctx.flow.flow_type))
        span = self._tracer.start_span(
            f"invoke_agent {ctx.flow.flow_type}",
            context=Context(),  # a new trace: an activation is never a child
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            links=[Link(previous)] if previous is not None else None,
        )
        span.end()
        if not span.get_span_context().is_valid:
            return None
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier, context=trace.set_span_in_context(span))
        return carrier.get("traceparent")

    def start_early(self, ctx: StepContext[Any], start: int) -> Span:
        """The attempt's span started before its outcome is known, for a remote runner's
        call to name as its parent. Its kind is fixed now: `CLIENT` for a model call (the
        Worker calls the runner), `INTERNAL` for a tool call; the rest is set at its end."""
        if ctx.step_type in _CHAT_STEPS:
            name, kind, parent = "chat", SpanKind.CLIENT, ctx.trace_context
            turn_id = getattr(ctx.loaded, "turn_id", None)
        else:
            record = _tool_record(ctx)
            name, kind = "execute_tool", SpanKind.INTERNAL
            parent = record.trace_context if record is not None else None
            turn_id = record.turn_id if record is not None else None
            if record is not None:
                name = f"execute_tool {record.tool_name}"
        return self._tracer.start_span(
            name,
            context=_context(parent),
            kind=kind,
            attributes=attrs.common(ctx, turn_id),
            start_time=start,
        )

    def emit_chat(
        self,
        ctx: StepContext[Any],
        start: int,
        result: object,
        error: BaseException | None,
        started: Span | None = None,
    ) -> None:
        outcome = result if isinstance(result, _MODEL_OUTCOMES) else None
        metadata = outcome.model_call_metadata if outcome is not None else None
        usage = outcome.usage if outcome is not None else None
        client = usage is not None and usage.model_calls == 1
        loaded = ctx.loaded
        attributes = attrs.common(ctx, getattr(loaded, "turn_id", None))
        attributes.update(attrs.chat(self.conventions, metadata, usage if client else None))
        attributes.update(attrs.chat_content(loaded, outcome, self.capture_content))
        request_model = metadata.request_model if metadata is not None else None
        span = self._span(
            started,
            f"chat {request_model}" if request_model else "chat",
            SpanKind.CLIENT if client else SpanKind.INTERNAL,
            ctx.trace_context,
            start,
            attributes,
        )
        _end(span, error)

    def emit_tool(
        self,
        ctx: StepContext[Any],
        start: int,
        result: object,
        error: BaseException | None,
        started: Span | None = None,
    ) -> None:
        record = _tool_record(ctx)
        if record is None:  # the Step ended before it loaded its call: no tool ran
            if started is not None:
                _end(started, error)
            return
        attributes = attrs.common(ctx, record.turn_id)
        attributes.update(attrs.execute_tool(record, result, self.capture_content))
        span = self._span(
            started,
            f"execute_tool {record.tool_name}",
            SpanKind.INTERNAL,
            record.trace_context,
            start,
            attributes,
        )
        _end(span, error, attrs.tool_failure(result))

    def _span(
        self,
        started: Span | None,
        name: str,
        kind: SpanKind,
        parent: str | None,
        start: int,
        attributes: attrs.Attributes,
    ) -> Span:
        """The attempt's span: the one started early, named and completed now, or a new one."""
        if started is not None:
            started.update_name(name)
            started.set_attributes(attributes)
            return started
        return self._tracer.start_span(
            name, context=_context(parent), kind=kind, attributes=attributes, start_time=start
        )


def _end(span: Span, error: BaseException | None, failure: str | None = None) -> None:
    if error is not None:
        span.set_attribute("error.type", type(error).__name__)
        span.set_status(Status(StatusCode.ERROR, str(error) or type(error).__name__))
    elif failure is not None:
        span.set_attribute("error.type", "ToolExecutionError")
        span.set_status(Status(StatusCode.ERROR, failure))
    span.end()


def _tool_record(ctx: StepContext[Any]) -> AgentToolCall | None:
    loaded = ctx.loaded
    record = loaded.record if isinstance(loaded, LoadedCall) else loaded
    return record if isinstance(record, AgentToolCall) else None


class _Attempt:
    """One traced Execute: its span is built when it ends, or started when a remote
    runner's call asks for its context."""

    def __init__(self, tracer: OtelStepTracer, ctx: StepContext[Any], start: int) -> None:
        self._tracer = tracer
        self._ctx = ctx
        self._start = start
        self._started: Span | None = None

    def trace_headers(self) -> dict[str, str]:
        try:
            if self._started is None:
                self._started = self._tracer.start_early(self._ctx, self._start)
            carrier: dict[str, str] = {}
            propagate.inject(carrier, context=trace.set_span_in_context(self._started))
            return carrier
        except Exception:
            log.exception("tracing: no trace context for %s", self._ctx.step_execution_id)
            return {}

    def end(self, result: object, error: BaseException | None) -> None:
        ctx = self._ctx
        try:
            if ctx.step_type in _CHAT_STEPS:
                self._tracer.emit_chat(ctx, self._start, result, error, self._started)
            else:
                self._tracer.emit_tool(ctx, self._start, result, error, self._started)
        except Exception:
            log.exception(
                "tracing: skipped the span of %s attempt %d", ctx.step_execution_id, ctx.attempt
            )


class _NoSpan:
    def end(self, result: object, error: BaseException | None) -> None:
        return None

    def trace_headers(self) -> dict[str, str]:
        return {}


_NO_SPAN = _NoSpan()


def _context(traceparent: str | None) -> Context:
    """The parent context a stored traceparent names; an empty one (a new trace) for none."""
    if traceparent is None:
        return Context()
    return _PROPAGATOR.extract({"traceparent": traceparent}, context=Context())


def _span_context(traceparent: str | None) -> trace.SpanContext | None:
    if traceparent is None:
        return None
    found = trace.get_current_span(_context(traceparent)).get_span_context()
    return found if found.is_valid else None


def _version() -> str:
    from .. import __version__

    return __version__
