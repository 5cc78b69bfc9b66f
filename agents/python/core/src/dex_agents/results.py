"""What the model sees for a final tool call record, and the turn-end notes built from them;
and the texts a runner is handed for its model, which UTF-8 must be able to carry."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from . import texts
from .runner import FrameworkMessage
from .types import AgentToolCall
from .validation import UNPAIRED_SURROGATE


def model_visible_result(record: AgentToolCall) -> str:
    if record.status == "succeeded":
        return record.output or ""
    if record.status == "failed":
        return f"{texts.TOOL_CALL_FAILED_PREFIX}{record.error}"
    if record.status == "rejected":
        return record.rejection_message or texts.DEFAULT_REJECTION_TEXT
    if record.status == "outcome_unknown":
        return texts.OUTCOME_UNKNOWN_TEXT
    raise ValueError(f"tool call {record.tool_call_id} is not final: {record.status}")


def tool_calls_note(header: str, records: Iterable[AgentToolCall]) -> str | None:
    """The turn-failure (or steered/cancelled) note: one line per final record."""
    final = sorted((r for r in records if r.is_final), key=lambda r: r.deferral_order)
    if not final:
        return None
    lines = [header]
    lines += [
        f"- {r.tool_name} {r.arguments} -> {r.status}: {model_visible_result(r)}" for r in final
    ]
    lines.append(texts.NOTE_FOOTER)
    return "\n".join(lines)


def sendable_text(text: str) -> str:
    """`text` as a model can be sent it: each unpaired surrogate replaced by U+FFFD. UTF-8
    cannot encode one, so no framework's HTTP client can send it (and a framework may not
    even serialize it); the session keeps the text as it was."""
    found = UNPAIRED_SURROGATE.search(text)
    return UNPAIRED_SURROGATE.sub("\ufffd", text) if found else text


def sendable_record(record: AgentToolCall) -> AgentToolCall:
    """A final call's record as its runner hands it on to the model: its output, error and
    rejection message (a user's text, as an answer in an output is) `sendable_text`."""
    update = {
        name: sendable
        for name in ("output", "error", "rejection_message")
        if (text := getattr(record, name)) is not None
        and (sendable := sendable_text(text)) is not text
    }
    return record.model_copy(update=update) if update else record


def user_message_as_sent(build: Callable[[str], object], text: str) -> object:
    """`build` (a runner's `build_user_message`) handed the user's text `sendable_text`; its
    message keeps the text as sent. Whatever `build` returns comes back for the caller to
    check."""
    sendable = sendable_text(text)
    item = build(sendable)
    if sendable is not text and isinstance(item, FrameworkMessage) and item.text == sendable:
        return replace(item, text=text)
    return item
