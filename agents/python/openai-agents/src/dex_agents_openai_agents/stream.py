"""Forwards the SDK's stream events of one model Step to the session's event stream."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from agents import HandoffOutputItem, RawResponsesStreamEvent, RunItemStreamEvent, StreamEvent
from dex_agents.runner import EventWriter

from .items import raw_field

HANDOFF_EVENT = "openai_agents.handoff"
_DELTA_EVENTS = {
    "response.output_text.delta": "text_delta",
    "response.reasoning_summary_text.delta": "reasoning_delta",
    "response.reasoning_text.delta": "reasoning_delta",
}
# A RunModel attempt heartbeats while the model streams, at most this often.
HEARTBEAT_INTERVAL_SECONDS = 10.0


def _handoff_payload(item: HandoffOutputItem) -> dict[str, Any]:
    return {
        "from_agent": item.source_agent.name,
        "to_agent": item.target_agent.name,
        "tool_call_id": raw_field(item.raw_item, "call_id"),
    }


class StreamForwarder:
    """Writes text and reasoning deltas and handoffs; heartbeats while events arrive."""

    def __init__(self, events: EventWriter, heartbeat: Callable[[], None]) -> None:
        self._events = events
        self._heartbeat = heartbeat
        self._last_heartbeat = time.monotonic()

    def forward(self, event: StreamEvent) -> None:
        self._maybe_heartbeat()
        if isinstance(event, RawResponsesStreamEvent):
            dex_type = _DELTA_EVENTS.get(event.data.type)
            delta = getattr(event.data, "delta", None)
            if dex_type is not None and isinstance(delta, str) and delta:
                self._events.write(dex_type, {"text": delta})
        elif isinstance(event, RunItemStreamEvent) and isinstance(event.item, HandoffOutputItem):
            self._events.write(HANDOFF_EVENT, _handoff_payload(event.item))

    def _maybe_heartbeat(self) -> None:
        now = time.monotonic()
        if now - self._last_heartbeat >= HEARTBEAT_INTERVAL_SECONDS:
            self._last_heartbeat = now
            self._heartbeat()
