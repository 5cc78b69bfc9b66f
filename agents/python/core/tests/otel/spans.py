"""Reading finished spans the same way whether they came from the SDK in process or over
OTLP: name, kind, IDs, parent, links and attributes."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import sqlalchemy as sa

from dex_agents.testing.otlp import SpanView


def from_sdk(spans: Iterable[Any]) -> list[SpanView]:
    """Views of opentelemetry.sdk ReadableSpans, in the order they ended."""
    views = []
    for span in spans:
        context, parent = span.context, span.parent
        views.append(
            SpanView(
                name=span.name,
                kind=span.kind.name,
                trace_id=f"{context.trace_id:032x}",
                span_id=f"{context.span_id:016x}",
                parent_id=f"{parent.span_id:016x}" if parent is not None else None,
                links=tuple(
                    (f"{link.context.trace_id:032x}", f"{link.context.span_id:016x}")
                    for link in span.links
                ),
                attributes={
                    k: list(v) if isinstance(v, tuple) else v for k, v in span.attributes.items()
                },
                error=span.status.status_code.name == "ERROR",
                start=span.start_time,
                end=span.end_time,
            )
        )
    return views


def of_session(spans: Sequence[SpanView], session_id: str) -> list[SpanView]:
    return sorted(
        (s for s in spans if s.attributes.get("dex.flow.id") == session_id),
        key=lambda s: s.start,
    )


def stored_trace_context(database_url: str, session_id: str) -> str | None:
    engine = sa.create_engine(database_url)
    try:
        with engine.connect() as conn:
            found: str | None = conn.execute(
                sa.text("SELECT trace_context FROM dex_sessions WHERE session_id = :s"),
                {"s": session_id},
            ).scalar_one()
            return found
    finally:
        engine.dispose()


def stored_record_trace_context(database_url: str, session_id: str, call_id: str) -> str | None:
    import json

    engine = sa.create_engine(database_url)
    try:
        with engine.connect() as conn:
            record = conn.execute(
                sa.text(
                    "SELECT record FROM dex_tool_calls WHERE session_id = :s AND tool_call_id = :c"
                ),
                {"s": session_id, "c": call_id},
            ).scalar_one()
    finally:
        engine.dispose()
    found: str | None = json.loads(record).get("trace_context")
    return found


def check_common(span: SpanView, session_id: str) -> None:
    """The attributes every span carries."""
    attributes = span.attributes
    for key in ("gen_ai.conversation.id", "session.id", "dex.flow.id"):
        assert attributes[key] == session_id, (span.name, key)
    assert attributes["dex.step.execution_id"]
    assert attributes["dex.run.id"] == f"{session_id}/{attributes['dex.step.execution_id']}"
    assert attributes["dex.step.attempt"] >= 1
    assert attributes["dex.agent.turn.id"].startswith("turn-")
