"""A snapshot converts to the UI messages the live stream built: checked by assembling the
translator's chunks with the real `ai` package and converting the stored messages of the
same turn (in-process: no server, no Worker)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from dex_agents.types import AgentEvent, AgentMessage, AgentSnapshot
from dex_agents.web.ui_messages import convert_agent_snapshot_to_ui_messages
from dex_agents.web.ui_stream import TurnTranslator

from .test_ui_stream import assemble, comparable, events_body, shape

__all__ = ["assemble"]  # the fixture, shared with the stream's tests


def event(offset: int, type: str, payload: dict[str, Any], step: str) -> AgentEvent:
    return AgentEvent(
        type=type, turn_id="turn-1", payload=json.dumps(payload), step_execution_id=step,
        offset=offset,
    )  # fmt: skip


def message(sequence: int, role: str, text: str, turn_id: str = "turn-1") -> AgentMessage:
    return AgentMessage.model_validate(
        {"sequence": sequence, "turn_id": turn_id, "role": role, "text": text,
         "framework_item": "{}", "created_at": "2026-12-06T00:00:00Z"}
    )  # fmt: skip


def test_a_continued_turn_converts_to_the_one_assistant_message_its_stream_built(
    assemble: Callable[..., dict[str, Any]],
) -> None:
    """A turn continued by a message of the agent's (Stepwise's decide_turn_continuation):
    its stream is one assistant message of two steps and shows no continuation message; after
    a reload the snapshot must show the same, not a user bubble and a second message."""
    translator = TurnTranslator("turn-1", lambda _call: None)
    sent = translator.start()
    for item in (
        event(1, "turn_started", {"sequence": 1}, "AwaitUserMessage-2"),
        event(2, "text_delta", {"text": "Draft: 3 items."}, "RunModel-3"),
        event(3, "text_delta", {"text": "Checked: 3 items, all in stock."}, "RunModel-4"),
        event(4, "turn_completed", {"message_count": 3}, "RunModel-4"),
    ):
        sent += translator.feed(item)
    assert shape(sent).count("start-step") == 2
    streamed = assemble(events_body(sent))["message"]

    snapshot = AgentSnapshot(
        state=None,
        messages=[
            message(1, "user", "How many items?"),
            message(2, "assistant", "Draft: 3 items."),
            message(3, "user", "Check the stock before you answer."),  # the continuation
            message(4, "assistant", "Checked: 3 items, all in stock."),
            message(5, "user", "Thanks", turn_id="turn-2"),
        ],
    )
    converted = convert_agent_snapshot_to_ui_messages(snapshot)

    assert [m["id"] for m in converted] == ["user-1", "assistant-turn-1", "user-5"]
    assert comparable(converted[1]) == comparable(streamed)
    assert [p["type"] for p in converted[1]["parts"]] == [
        "step-start", "text", "step-start", "text",
    ]  # fmt: skip
