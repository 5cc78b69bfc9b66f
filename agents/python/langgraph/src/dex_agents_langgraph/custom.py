"""What a graph writes with its stream writer (`get_stream_writer()`, `runtime.stream_writer`,
`ToolRuntime.stream_writer`: LangGraph's "custom" stream mode) becomes a session event, so a
UI reading the session's events sees it, from the RunModel Step and from tool Steps alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from dex_agents.runner import EventWriter
from pydantic_core import to_jsonable_python

CUSTOM_EVENT: Final = "langgraph.custom"
"""The event type of one stream-writer chunk; its payload is `{"data": chunk}`."""


def custom_payload(chunk: Any) -> dict[str, Any]:
    """The event payload of one chunk: JSON as is, Pydantic models and dataclasses as their
    JSON form, anything else as its `str`."""
    return {"data": to_jsonable_python(chunk, fallback=str)}


def event_stream_writer(events: EventWriter) -> Callable[[Any], None]:
    """A LangGraph stream writer that writes each chunk as a `langgraph.custom` event."""

    def write(chunk: Any) -> None:
        events.write(CUSTOM_EVENT, custom_payload(chunk))

    return write
