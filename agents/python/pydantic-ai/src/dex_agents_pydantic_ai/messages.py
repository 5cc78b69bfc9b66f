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
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Protocol, TypeVar

import pydantic
import pydantic_core
from dex_agents.results import sendable_text
from dex_agents.runner import FrameworkMessage
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    SystemPromptPart,
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


def sendable_message(message: ModelMessage) -> ModelMessage | None:
    """`message` with each unpaired surrogate in its JSON replaced by U+FFFD, which Pydantic
    AI's serializer (UTF-8 JSON) can then write; None when it holds none, or when it cannot be
    serialized for another reason (a value that is not JSON)."""
    try:
        value = _MESSAGE_ADAPTER.dump_python(message, mode="json")
    except pydantic_core.PydanticSerializationError:
        return None
    sendable = _sendable_json(value)
    if sendable == value:
        return None
    # Through JSON, so binary content decodes from base64 as it was written.
    return load_message(json.dumps(sendable))


def _sendable_json(value: object) -> object:
    if isinstance(value, str):
        return sendable_text(value)
    if isinstance(value, list):
        return [_sendable_json(item) for item in value]
    if isinstance(value, dict):
        return {sendable_text(key): _sendable_json(item) for key, item in value.items()}
    return value


def user_message(text: str) -> FrameworkMessage:
    request = ModelRequest(parts=[UserPromptPart(text)], timestamp=datetime.now(UTC))
    return FrameworkMessage(role="user", text=text, framework_item=dump_message(request))


@dataclass(frozen=True)
class StoredHistory:
    """A session's stored messages as Pydantic AI's native history, pieces merged back.

    A Worker builds it once per session and extends it with the messages stored since each
    Step (`AgentTurnContext.folded(extend_history)`), so its messages are shared by every
    later Step: a run gets them through `for_run()`.
    """

    messages: tuple[ModelMessage, ...] = ()
    last_envelope: str | None = None
    """The envelope of the last message: a next piece with the same one is merged into it."""
    has_system_prompt: bool = False

    def for_run(self) -> list[ModelMessage]:
        """The history one Pydantic AI run may change: the messages before the last request
        shared, that request and what follows it copied.

        A run changes only the request at the end of its history and the requests it adds
        itself (it fills in the request's `timestamp`, `run_id`, `instructions` and
        `metadata` and replaces its `parts`); it replaces an earlier message with a copy
        rather than change it, and its history passes (cleaning, merging) build new lists.
        So handing a run its history costs the same at message 10 and message 10,000.
        """
        start = max(len(self.messages) - 1, 0)
        while start and not isinstance(self.messages[start], ModelRequest):
            start -= 1
        return [*self.messages[:start], *(_fresh(message) for message in self.messages[start:])]


def extend_history(history: StoredHistory | None, items: Sequence[StoredItem]) -> StoredHistory:
    """`history` with the stored `items` after it: each parsed, consecutive pieces of one
    native message merged. `history` itself is not changed."""
    messages = list(history.messages) if history else []
    last_envelope = history.last_envelope if history else None
    has_system_prompt = history.has_system_prompt if history else False
    for item in items:
        message = load_message(item.framework_item)
        envelope = _envelope(message)
        if messages and envelope == last_envelope:
            messages[-1] = _merged(messages[-1], message)
        else:
            messages.append(message)
        last_envelope = envelope
        has_system_prompt = has_system_prompt or (
            isinstance(message, ModelRequest)
            and any(isinstance(part, SystemPromptPart) for part in message.parts)
        )
    return StoredHistory(tuple(messages), last_envelope, has_system_prompt)


def load_history(items: Sequence[StoredItem]) -> list[ModelMessage]:
    """Native messages from stored items, with the pieces of each native message merged."""
    return extend_history(None, items).for_run()


ObjectT = TypeVar("ObjectT")


def _fresh(message: ModelMessage) -> ModelMessage:
    """A copy a run may change: its `parts` list, `metadata`, `provider_details` and `usage`
    are its own. Parts are shared: Pydantic AI replaces them, never changes them."""
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
