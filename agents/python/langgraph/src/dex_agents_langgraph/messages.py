"""Stored messages as LangChain messages (`message_to_dict` JSON), and back."""

from __future__ import annotations

import json
from collections.abc import Sequence

from dex_agents.runner import AgentTurnContext, FrameworkMessage
from dex_agents.types import AgentMessage
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    message_to_dict,
    messages_from_dict,
)


def encode_message(message: BaseMessage) -> str:
    return json.dumps(message_to_dict(message), ensure_ascii=False, separators=(",", ":"))


def decode_message(framework_item: str) -> BaseMessage:
    return messages_from_dict([json.loads(framework_item)])[0]


def stored_messages(
    turn: AgentTurnContext, messages: Sequence[AgentMessage], *, copy: bool = True
) -> list[BaseMessage]:
    """The stored conversation as LangChain messages, parsed once per session. The shared
    parsed values are never changed: the graph gets copies; `copy=False` is for a caller that
    only reads them (serializes or counts them)."""
    parsed = [turn.parsed(m, decode_message) for m in messages]
    return [m.model_copy(deep=True) for m in parsed] if copy else parsed


def user_message(text: str) -> FrameworkMessage:
    return FrameworkMessage(
        role="user", text=text, framework_item=encode_message(HumanMessage(text))
    )


def _text(message: BaseMessage) -> str | None:
    text = message.text
    return text if text else None


def project_message(message: BaseMessage, tool_names: dict[str, str]) -> FrameworkMessage:
    """The stored projection of one message: role, display text and tool fields. An assistant
    message carries its first tool call's fields; every call stays in the framework item."""
    encoded = encode_message(message)
    if isinstance(message, ToolMessage):
        return FrameworkMessage(
            role="tool",
            framework_item=encoded,
            tool_call_id=message.tool_call_id,
            tool_name=message.name or tool_names.get(message.tool_call_id),
            tool_output=message.text,
        )
    if isinstance(message, AIMessage):
        call = message.tool_calls[0] if message.tool_calls else None
        return FrameworkMessage(
            role="assistant",
            framework_item=encoded,
            text=_text(message),
            tool_call_id=call["id"] if call else None,
            tool_name=call["name"] if call else None,
            tool_arguments=json.dumps(call["args"], ensure_ascii=False) if call else None,
        )
    return FrameworkMessage(role="user", framework_item=encoded, text=_text(message))


def project_messages(messages: Sequence[BaseMessage]) -> list[FrameworkMessage]:
    names = {
        call["id"]: call["name"]
        for message in messages
        if isinstance(message, AIMessage)
        for call in message.tool_calls
        if call["id"]
    }
    return [project_message(message, names) for message in messages]
