"""Chat Completions items: the stored framework items, the run state, and the model input.

Every framework_item is one Chat Completions message as JSON text, so the history replays to
any provider LiteLLM speaks. The turn's items stay in the run state until the turn ends, and
a tool result is built from each final record when the next model call needs it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from .. import texts
from ..results import model_visible_result
from ..runner import AgentTurnContext, FrameworkMessage
from ..types import AgentMessage, AgentToolCall, ContextSummary

SUMMARY_PREFIX: Final = texts.CONTEXT_SUMMARY_PREFIX
Item = dict[str, Any]


def dumps(item: Mapping[str, Any]) -> str:
    return json.dumps(item, separators=(",", ":"), ensure_ascii=False)


def user_item(text: str) -> Item:
    return {"role": "user", "content": text}


def summary_item(summary: ContextSummary) -> Item:
    return user_item(f"{SUMMARY_PREFIX}\n{summary.text}")


def to_framework_message(item: Mapping[str, Any]) -> FrameworkMessage:
    """The stored projection of one item."""
    if item["role"] == "tool":
        return FrameworkMessage(
            role="tool",
            framework_item=dumps(item),
            tool_call_id=item["tool_call_id"],
            tool_name=item.get("name"),
            tool_output=_text(item.get("content")),
        )
    calls = tool_calls_of(item)
    single = calls[0] if len(calls) == 1 else None
    return FrameworkMessage(
        role="user" if item["role"] == "user" else "assistant",
        framework_item=dumps(item),
        text=_text(item.get("content")),
        tool_call_id=single["id"] if single else None,
        tool_name=single["function"]["name"] if single else None,
        tool_arguments=single["function"]["arguments"] if single else None,
    )


def to_framework_messages(items: Iterable[Mapping[str, Any]]) -> list[FrameworkMessage]:
    return [to_framework_message(item) for item in items]


def stored_item(message: AgentMessage) -> Item:
    """A stored message's item; a message another runner stored falls back to its text."""
    try:
        item = json.loads(message.framework_item)
    except ValueError:
        item = None
    if isinstance(item, dict) and item.get("role") in ("user", "assistant", "tool", "system"):
        return item
    if message.role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id or "",
            "content": message.tool_output or "",
        }
    return {"role": message.role, "content": message.text or ""}


def tool_calls_of(item: Mapping[str, Any]) -> list[dict[str, Any]]:
    calls = item.get("tool_calls") if item.get("role") == "assistant" else None
    return list(calls) if isinstance(calls, list) else []


def tool_name_of(item: Mapping[str, Any], tool_call_id: str) -> str | None:
    for call in tool_calls_of(item):
        if call.get("id") == tool_call_id:
            return str(call["function"]["name"])
    return None


def _text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    # Content parts (a list of {"type": "text", "text": ...}) are shown as their text.
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return str(content)


@dataclass
class RunState:
    """FrameworkRunState: the turn's unstored items, and the continuations made in a row."""

    items: list[Item] = field(default_factory=list)
    consecutive_continuations: int = 0

    @classmethod
    def load(cls, text: str | None) -> RunState:
        if not text:
            return cls()
        raw = json.loads(text)
        return cls(list(raw.get("items", [])), int(raw.get("consecutive_continuations", 0)))

    def dump(self) -> str:
        raw: dict[str, Any] = {"items": self.items}
        # The count is kept only after a continuation.
        if self.consecutive_continuations:
            raw["consecutive_continuations"] = self.consecutive_continuations
        return dumps(raw)


def unanswered_calls(items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Tool calls of the items' model responses that have no tool result yet, in order."""
    answered = {item.get("tool_call_id") for item in items if item.get("role") == "tool"}
    return [
        call for item in items for call in tool_calls_of(item) if call.get("id") not in answered
    ]


def tool_result_items(
    items: Sequence[Mapping[str, Any]], records: Sequence[AgentToolCall], *, strict: bool
) -> list[Item]:
    """A tool result for every unanswered call, from its final record.

    With `strict`, a call without a final record is an error (RunModel runs only when every
    record is final); otherwise its outcome counts as unknown, so the history stays valid.
    """
    by_id = {record.tool_call_id: record for record in records}
    results = []
    for call in unanswered_calls(items):
        record = by_id.get(call["id"])
        if record is not None and record.is_final:
            content = model_visible_result(record)
        elif strict:
            raise RuntimeError(f"tool call {call['id']} has no final record")
        else:
            content = texts.OUTCOME_UNKNOWN_TEXT
        results.append(
            {
                "role": "tool",
                "tool_call_id": call["id"],
                "name": call["function"]["name"],
                "content": content,
            }
        )
    return results


def split_turn(turn: AgentTurnContext) -> tuple[list[Item], list[Item]]:
    """The stored items before the turn, and the turn's own stored items."""
    earlier: list[Item] = []
    current: list[Item] = []
    for message in turn.messages:
        (current if message.turn_id == turn.turn_id else earlier).append(stored_item(message))
    return earlier, current


def strip_for_request(item: Mapping[str, Any]) -> Item:
    """An item as the model receives it: tool results carry no name, which strict servers
    refuse; the stored item keeps it for display and for the transcript."""
    if item.get("role") == "tool":
        return {key: value for key, value in item.items() if key != "name"}
    return dict(item)
