"""What the model sees for a final tool call record, and the turn-end notes built from them."""

from __future__ import annotations

from collections.abc import Iterable

from . import texts
from .types import AgentToolCall


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
