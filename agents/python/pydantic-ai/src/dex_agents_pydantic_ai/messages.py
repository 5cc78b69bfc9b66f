"""Stored session messages <-> Pydantic AI `ModelMessage`s.

A session message holds one native message as its `framework_item`. A `ModelResponse` with
several tool calls, or a `ModelRequest` with several tool returns, is stored as one message per
call or return, so every stored message projects to at most one tool call. Each piece keeps the
native message's fields; consecutive pieces whose fields match are merged back on replay, so the
model sees exactly the native history.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Protocol, TypeVar

import pydantic
from dex_agents.runner import FrameworkMessage
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

PartT = TypeVar("PartT")

# The element type of ModelMessagesTypeAdapter, with the same binary encoding.
_MESSAGE_ADAPTER: pydantic.TypeAdapter[ModelMessage] = pydantic.TypeAdapter(
    ModelMessage, config=pydantic.ConfigDict(ser_json_bytes="base64", val_json_bytes="base64")
)


class StoredItem(Protocol):
    """What replay needs from a stored message: AgentMessage and FrameworkMessage both fit."""

    @property
    def framework_item(self) -> str: ...


def dump_message(message: ModelMessage) -> str:
    return _MESSAGE_ADAPTER.dump_json(message).decode()


def load_message(framework_item: str) -> ModelMessage:
    return _MESSAGE_ADAPTER.validate_json(framework_item)


def user_message(text: str) -> FrameworkMessage:
    request = ModelRequest(parts=[UserPromptPart(text)], timestamp=datetime.now(UTC))
    return FrameworkMessage(role="user", text=text, framework_item=dump_message(request))


@dataclass(frozen=True)
class ParsedItem:
    """A stored item parsed once: its native message and the envelope replay merges by.

    A Worker shares it between the Steps of a session, so `message` is never handed to
    Pydantic AI itself (which changes the messages of the history it runs): `load_history`
    gives Pydantic AI a copy of each message.
    """

    message: ModelMessage
    envelope: str


def parse_item(framework_item: str) -> ParsedItem:
    message = load_message(framework_item)
    return ParsedItem(message, _envelope(message))


def _parse_stored(item: StoredItem) -> ParsedItem:
    return parse_item(item.framework_item)


def load_history(
    items: Iterable[StoredItem], parsed: Callable[[StoredItem], ParsedItem] = _parse_stored
) -> list[ModelMessage]:
    """Native messages from stored items, with the pieces of each native message merged.

    `parsed` may return shared, cached values: every message returned is a new object.
    """
    history: list[ModelMessage] = []
    last_envelope: str | None = None
    for item in items:
        piece = parsed(item)
        if history and piece.envelope == last_envelope:
            history[-1] = _merged(history[-1], piece.message)
        else:
            history.append(_fresh(piece.message))
        last_envelope = piece.envelope
    return history


ObjectT = TypeVar("ObjectT")


def _fresh(message: ModelMessage) -> ModelMessage:
    """A copy Pydantic AI may change: a run sets fields of history messages (timestamp,
    run_id, instructions, parts) and updates their metadata in place. Parts are shared:
    Pydantic AI replaces them, never changes them."""
    fresh = _shallow_copy(message)
    fresh.parts = list(message.parts)  # type: ignore[assignment]
    if message.metadata:
        fresh.metadata = _containers_copied(message.metadata)
    if isinstance(message, ModelResponse) and isinstance(fresh, ModelResponse):
        fresh.usage = _shallow_copy(message.usage)
        if message.provider_details:
            fresh.provider_details = _containers_copied(message.provider_details)
    return fresh


def _containers_copied(value: ObjectT) -> ObjectT:
    """`copy.deepcopy` of parsed JSON (dicts, lists, and immutable leaves such as strings,
    numbers and datetimes), at a fraction of its cost: every message of the history pays it
    on every model call."""
    if isinstance(value, dict):
        return {key: _containers_copied(item) for key, item in value.items()}  # type: ignore[return-value]
    if isinstance(value, list):
        return [_containers_copied(item) for item in value]  # type: ignore[return-value]
    return value


def _shallow_copy(value: ObjectT) -> ObjectT:
    """`copy.copy` of a plain dataclass instance, without its reduce protocol's cost."""
    fields = getattr(value, "__dict__", None)
    if fields is None or hasattr(type(value), "__slots__"):
        return copy.copy(value)
    fresh: ObjectT = object.__new__(type(value))
    fresh.__dict__.update(fields)
    return fresh


def to_framework_messages(
    messages: Sequence[ModelMessage], output_tool_names: frozenset[str] = frozenset()
) -> list[FrameworkMessage]:
    """One stored message per piece of each native message, with its projection fields."""
    stored: list[FrameworkMessage] = []
    for message in messages:
        if isinstance(message, ModelRequest):
            stored.extend(_request_piece(piece) for piece in _request_pieces(message))
        else:
            stored.extend(
                _response_piece(piece, output_tool_names) for piece in _response_pieces(message)
            )
    return stored


def _envelope(message: ModelMessage) -> str:
    """Everything but the parts: equal for the pieces of one native message."""
    fields = _MESSAGE_ADAPTER.dump_python(message, mode="json")
    del fields["parts"]
    return json.dumps(fields, sort_keys=True)


def _merged(first: ModelMessage, second: ModelMessage) -> ModelMessage:
    if isinstance(first, ModelRequest) and isinstance(second, ModelRequest):
        return replace(first, parts=[*first.parts, *second.parts])
    if isinstance(first, ModelResponse) and isinstance(second, ModelResponse):
        return replace(first, parts=[*first.parts, *second.parts])
    raise ValueError("only pieces of the same kind of message can be merged")


def _groups(parts: Sequence[PartT], alone: type) -> list[list[PartT]]:
    """Parts in order: each `alone` part on its own, runs of other parts together."""
    groups: list[list[PartT]] = []
    for part in parts:
        if isinstance(part, alone):
            groups.append([part])
        elif groups and not isinstance(groups[-1][0], alone):
            groups[-1].append(part)
        else:
            groups.append([part])
    return groups or [[]]


def _request_pieces(message: ModelRequest) -> list[ModelRequest]:
    groups: list[list[ModelRequestPart]] = _groups(message.parts, ToolReturnPart)
    return [replace(message, parts=group) for group in groups]


def _response_pieces(message: ModelResponse) -> list[ModelResponse]:
    groups: list[list[ModelResponsePart]] = _groups(message.parts, ToolCallPart)
    return [replace(message, parts=group) for group in groups]


def _request_piece(piece: ModelRequest) -> FrameworkMessage:
    item = dump_message(piece)
    if len(piece.parts) == 1 and isinstance(part := piece.parts[0], ToolReturnPart):
        return FrameworkMessage(
            role="tool",
            framework_item=item,
            tool_call_id=part.tool_call_id,
            tool_name=part.tool_name,
            tool_output=part.model_response_str(),
        )
    texts = [_user_text(part) for part in piece.parts if isinstance(part, UserPromptPart)]
    return FrameworkMessage(role="user", framework_item=item, text="\n".join(texts) or None)


def _response_piece(piece: ModelResponse, output_tool_names: frozenset[str]) -> FrameworkMessage:
    item = dump_message(piece)
    if len(piece.parts) == 1 and isinstance(part := piece.parts[0], ToolCallPart):
        arguments = part.args_as_json_str()
        return FrameworkMessage(
            role="assistant",
            framework_item=item,
            # A structured answer arrives as an output tool call: its arguments are the answer.
            text=arguments if part.tool_name in output_tool_names else None,
            tool_call_id=part.tool_call_id,
            tool_name=part.tool_name,
            tool_arguments=arguments,
        )
    texts = [part.content for part in piece.parts if isinstance(part, TextPart)]
    return FrameworkMessage(role="assistant", framework_item=item, text="".join(texts) or None)


def _user_text(part: UserPromptPart) -> str:
    if isinstance(part.content, str):
        return part.content
    return "".join(item for item in part.content if isinstance(item, str))
