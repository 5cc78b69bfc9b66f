"""A session's snapshot as AI SDK UI messages (`convertAgentSnapshotToUIMessages`), and the
tool call views the UI message stream shares with it.

One UI message per stored user message (`user-<sequence>`), and one assistant UI message per
turn (`assistant-<turn_id>`, the `messageId` of that turn's stream): `step-start` where a
model call's output begins, `text` parts, and a `dynamic-tool` part per tool call with its
result (`output-available`, `output-error` or `output-denied`). The active turn's tool calls
come from its records, with `approval-requested` for a pending approval and a
`data-dex-question` part for a pending question. The notes the session stores as user
messages for the model (a failed, steered or stopped turn's tool calls) are left out: the
tool parts already show those calls. So is a user message that continues a turn already under
way (a Stepwise `decide_turn_continuation` message, stored after the turn's model output): the
turn's stream shows none, and goes on in the same assistant message with a new step, so the
model output after it begins a step here too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from .. import texts
from ..builtins import PLANNING_TURN_REJECTION
from ..types import AgentInterrupt, AgentMessage, AgentSnapshot, AgentToolCall

UIMessage = dict[str, Any]
UIPart = dict[str, Any]

# The fixed rejection texts: a stored tool result equal to one is a call that never ran.
REJECTION_TEXTS = frozenset(
    {
        texts.DEFAULT_REJECTION_TEXT,
        texts.STEERED_REJECTION,
        texts.TURN_CANCELLED_REJECTION,
        texts.APPROVAL_DEADLINE_PASSED,
        texts.QUESTION_DEADLINE_PASSED,
        texts.QUESTION_DECLINED,
        PLANNING_TURN_REJECTION,
    }
)
NOTE_HEADERS = (
    texts.TURN_FAILURE_NOTE_HEADER,
    texts.STEERED_NOTE_HEADER,
    texts.CANCELLED_NOTE_HEADER,
)
QUESTION_PART = "data-dex-question"


def assistant_message_id(turn_id: str) -> str:
    """The ID of a turn's assistant UI message, in the stream and in the conversion."""
    return f"assistant-{turn_id}"


@dataclass(frozen=True)
class ToolOutcome:
    """How a final tool call shows: its output, its error text, or denied (never ran)."""

    state: Literal["output-available", "output-error", "output-denied"]
    output: Any = None
    error_text: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class ToolView:
    """What a UI shows of one tool call: its name, its input, and its outcome once final."""

    tool_name: str
    input: Any
    outcome: ToolOutcome | None = None


def json_value(text: str | None) -> Any:
    """A stored JSON text as its value; text that is not JSON stays a string."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def record_outcome(record: AgentToolCall) -> ToolOutcome | None:
    """A final record's outcome (None while it is not final)."""
    if record.status == "succeeded":
        return ToolOutcome("output-available", output=json_value(record.output))
    if record.status == "failed":
        return ToolOutcome("output-error", error_text=record.error or "")
    if record.status == "outcome_unknown":
        return ToolOutcome("output-error", error_text=texts.OUTCOME_UNKNOWN_TEXT)
    if record.status == "rejected":
        return ToolOutcome("output-denied", reason=record.rejection_message)
    return None


def stored_outcome(tool_output: str | None) -> ToolOutcome:
    """The outcome a stored tool result shows: the model-visible result of a final call. A
    failed call's text starts with the failure prefix; the fixed rejection texts and the
    outcome-unknown text are recognized; anything else is the call's output."""
    text = tool_output or ""
    if text.startswith(texts.TOOL_CALL_FAILED_PREFIX):
        return ToolOutcome("output-error", error_text=text[len(texts.TOOL_CALL_FAILED_PREFIX) :])
    if text == texts.OUTCOME_UNKNOWN_TEXT:
        return ToolOutcome("output-error", error_text=text)
    if text in REJECTION_TEXTS:
        reason = None if text == texts.DEFAULT_REJECTION_TEXT else text
        return ToolOutcome("output-denied", reason=reason)
    return ToolOutcome("output-available", output=json_value(tool_output))


def turn_tool_views(snapshot: AgentSnapshot, turn_id: str) -> dict[str, ToolView]:
    """The turn's tool calls: from its records while it is active, else from its stored
    messages (an assistant message names a call and its arguments, a tool message holds
    its result)."""
    views: dict[str, ToolView] = {}
    for message in snapshot.messages:
        if message.turn_id != turn_id or not message.tool_call_id:
            continue
        known = views.get(message.tool_call_id)
        name = message.tool_name or (known.tool_name if known else "")
        if message.role == "tool":
            outcome = stored_outcome(message.tool_output)
            views[message.tool_call_id] = ToolView(name, known.input if known else None, outcome)
        elif message.role == "assistant":
            views[message.tool_call_id] = ToolView(name, json_value(message.tool_arguments))
    for record in snapshot.tool_calls:
        if record.turn_id == turn_id:
            views[record.tool_call_id] = ToolView(
                record.tool_name, json_value(record.arguments), record_outcome(record)
            )
    return views


# Parts --------------------------------------------------------------------------------------


def tool_part(tool_call_id: str, view: ToolView) -> UIPart:
    part: UIPart = {
        "type": "dynamic-tool",
        "toolName": view.tool_name,
        "toolCallId": tool_call_id,
        "state": "input-available",
        "input": view.input,
    }
    if view.outcome is not None:
        apply_outcome(part, view.outcome)
    return part


def apply_outcome(part: UIPart, outcome: ToolOutcome) -> None:
    part["state"] = outcome.state
    if outcome.state == "output-available":
        part["output"] = outcome.output
    elif outcome.state == "output-error":
        part["errorText"] = outcome.error_text or ""
    else:
        approval: dict[str, Any] = {"id": part["toolCallId"], "approved": False}
        if outcome.reason is not None:
            approval["reason"] = outcome.reason
        part["approval"] = approval


def question_data(interrupt_id: str, payload: dict[str, Any], status: str) -> dict[str, Any]:
    """The data of a `data-dex-question` part: the question, what may answer it, and its
    status (`pending`, then `answered` or `declined`)."""
    return {
        "interrupt_id": interrupt_id,
        "tool_call_id": payload.get("tool_call_id"),
        "tool_name": payload.get("tool_name"),
        "question": payload.get("question"),
        "choices": payload.get("choices") or [],
        "allows_free_text": payload.get("allows_free_text", True),
        "deadline": payload.get("deadline"),
        "status": status,
    }


def question_part(interrupt: AgentInterrupt) -> UIPart:
    payload = interrupt.model_dump(mode="json")
    return {
        "type": QUESTION_PART,
        "id": interrupt.interrupt_id,
        "data": question_data(interrupt.interrupt_id, payload, "pending"),
    }


# The conversion -----------------------------------------------------------------------------


def convert_agent_snapshot_to_ui_messages(snapshot: AgentSnapshot) -> list[UIMessage]:
    """The snapshot's messages (the last 200) as AI SDK UI messages, for a page reload."""
    messages: list[UIMessage] = []
    under_way: set[str] = set()  # the turns with model output so far
    for message in snapshot.messages:
        if message.role == "user":
            if _is_note(message):
                continue
            if message.turn_id in under_way:  # continues the turn: a new step follows
                _start_step(_turn_message(messages, message.turn_id))
            else:
                messages.append(_user_message(message))
            continue
        under_way.add(message.turn_id)
        _add_to_turn(_turn_message(messages, message.turn_id), message)
    active = snapshot.state.active_turn_id if snapshot.state else None
    if active is not None:
        _add_active_turn(_turn_message(messages, active), snapshot, active)
    return messages


def _start_step(ui: UIMessage) -> None:
    """The turn's next model output begins a step of its own, as its stream's does."""
    parts: list[UIPart] = ui["parts"]
    if parts and parts[-1]["type"] != "step-start":
        parts.append({"type": "step-start"})


def _is_note(message: AgentMessage) -> bool:
    return (message.text or "").startswith(NOTE_HEADERS)


def _user_message(message: AgentMessage) -> UIMessage:
    return {
        "id": f"user-{message.sequence}",
        "role": "user",
        "parts": [{"type": "text", "text": message.text or ""}],
    }


def _turn_message(messages: list[UIMessage], turn_id: str) -> UIMessage:
    """The turn's assistant UI message when it is the last one, else a new one."""
    message_id = assistant_message_id(turn_id)
    if messages and messages[-1]["id"] == message_id:
        return messages[-1]
    taken = sum(1 for m in messages if m["id"].startswith(message_id))
    unique = message_id if taken == 0 else f"{message_id}-{taken + 1}"
    message: UIMessage = {"id": unique, "role": "assistant", "parts": []}
    messages.append(message)
    return message


def _add_to_turn(ui: UIMessage, message: AgentMessage) -> None:
    parts: list[UIPart] = ui["parts"]
    if message.role == "tool":
        if message.tool_call_id:
            part = _tool_part_of(parts, message.tool_call_id)
            if part is None:
                part = tool_part(message.tool_call_id, ToolView(message.tool_name or "", None))
                parts.append(part)
            apply_outcome(part, stored_outcome(message.tool_output))
        return
    if not parts or _ends_with_tool_result(parts):
        parts.append({"type": "step-start"})
    if message.text:
        parts.append({"type": "text", "text": message.text, "state": "done"})
    if message.tool_call_id:
        view = ToolView(message.tool_name or "", json_value(message.tool_arguments))
        parts.append(tool_part(message.tool_call_id, view))


def _ends_with_tool_result(parts: list[UIPart]) -> bool:
    """A model call's output after a tool result begins a new step."""
    last = parts[-1]
    return bool(last["type"] == "dynamic-tool" and last["state"] != "input-available")


def _add_active_turn(ui: UIMessage, snapshot: AgentSnapshot, turn_id: str) -> None:
    """The active turn's records the stored messages do not show yet, and its pending
    interrupts: approvals as `approval-requested`, questions as `data-dex-question`."""
    parts: list[UIPart] = ui["parts"]
    records = sorted(
        (r for r in snapshot.tool_calls if r.turn_id == turn_id), key=lambda r: r.deferral_order
    )
    if records and not parts:
        parts.append({"type": "step-start"})
    for record in records:
        if _tool_part_of(parts, record.tool_call_id) is None:
            view = ToolView(record.tool_name, json_value(record.arguments), record_outcome(record))
            parts.append(tool_part(record.tool_call_id, view))
    for interrupt in snapshot.pending_interrupts:
        if interrupt.kind == "question":
            parts.append(question_part(interrupt))
            continue
        part = _tool_part_of(parts, interrupt.tool_call_id)
        if part is not None and part["state"] == "input-available":
            part["state"] = "approval-requested"
            part["approval"] = {"id": interrupt.interrupt_id}


def _tool_part_of(parts: list[UIPart], tool_call_id: str) -> UIPart | None:
    return next(
        (p for p in parts if p["type"] == "dynamic-tool" and p["toolCallId"] == tool_call_id),
        None,
    )
