"""JSON on the wire: what a UI reads, without the fields only Steps use.

The session API serves the client's models as their snake_case JSON (`model_dump(mode="json")`)
with the Step-only fields removed: a message's `framework_item`, a tool call's
`tool_source_reference`, `trace_context`, `input_continuation`, `input_answers`,
`task_answer_pending` and `framework_data`. The trimmed models below document the responses
in OpenAPI and do the removal: they ignore the fields they do not declare.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, create_model
from starlette.responses import JSONResponse

from ..types import (
    AgentEvent,
    AgentMessage,
    AgentMessagesPage,
    AgentSnapshot,
    AgentToolCall,
    json_text,
)

# The fields a UI never needs: opaque framework state and what a Step resumes from.
STEP_ONLY_FIELDS = frozenset(
    {
        "framework_item",
        "tool_source_reference",
        "trace_context",
        "input_continuation",
        "input_answers",
        "task_answer_pending",
        "framework_data",
    }
)


class WireJSONResponse(JSONResponse):
    """A JSON response through `json_text`."""

    def render(self, content: Any) -> bytes:
        return json_text(content).encode("utf-8")


def _trimmed(model: type[BaseModel], name: str, **replace: Any) -> type[BaseModel]:
    """`model` without the Step-only fields (and with `replace`'s field types), ignoring any
    field it does not declare, so validating the full JSON drops them."""
    fields: dict[str, Any] = {
        field_name: (replace.get(field_name, info.annotation), info)
        for field_name, info in model.model_fields.items()
        if field_name not in STEP_ONLY_FIELDS
    }
    config = ConfigDict(extra="ignore")
    trimmed: type[BaseModel] = create_model(name, __config__=config, **fields)
    trimmed.__doc__ = model.__doc__
    return trimmed


Message = _trimmed(AgentMessage, "Message")
ToolCall = _trimmed(AgentToolCall, "ToolCall")
MessagesPage = _trimmed(AgentMessagesPage, "MessagesPage", messages=list[Message])  # type: ignore[valid-type]
_SnapshotFields = _trimmed(
    AgentSnapshot,
    "_SnapshotFields",
    messages=list[Message],  # type: ignore[valid-type]
    tool_calls=list[ToolCall],  # type: ignore[valid-type]
)


class Snapshot(_SnapshotFields):  # type: ignore[valid-type,misc]
    """A session's snapshot, with the resume token of the event stream at that snapshot."""

    session_id: str
    flow_type: str
    # The offset of the last event the snapshot includes, as a string: follow the events
    # after it (`Last-Event-ID` or `?after=`) and none is missed or seen twice.
    resume_token: str


class Event(BaseModel):
    """One event of a session's stream; `payload` is a JSON object."""

    type: str
    turn_id: str | None = None
    attempt: int = 1
    payload: dict[str, Any]
    step_execution_id: str = ""
    offset: int
    created_at: str


def snapshot_json(
    snapshot: AgentSnapshot, *, session_id: str, flow_type: str, resume_token: int
) -> dict[str, Any]:
    value = snapshot.model_dump(mode="json")
    value.update(session_id=session_id, flow_type=flow_type, resume_token=str(resume_token))
    trimmed: dict[str, Any] = Snapshot.model_validate(value).model_dump(mode="json")
    return trimmed


def messages_page_json(page: AgentMessagesPage) -> dict[str, Any]:
    return MessagesPage.model_validate(page.model_dump(mode="json")).model_dump(mode="json")


def event_json(event: AgentEvent) -> dict[str, Any]:
    value = event.model_dump(mode="json")
    value["payload"] = json.loads(event.payload)
    return value
