"""Stored messages as the SDK's own input items (Responses API shapes), and back."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dex_agents.runner import AgentTurnContext, FrameworkMessage
from dex_agents.types import AgentMessage, MessageRole

InputItem = dict[str, Any]


def raw_field(raw: Any, name: str) -> Any:
    """A field of an SDK item that may be a dict or an OpenAI model object."""
    return raw.get(name) if isinstance(raw, Mapping) else getattr(raw, name, None)


def encode_item(item: Mapping[str, Any]) -> str:
    return json.dumps(item, ensure_ascii=False, separators=(",", ":"))


def user_message_item(text: str) -> InputItem:
    return {"role": "user", "content": text}


def user_message(text: str) -> FrameworkMessage:
    return FrameworkMessage(
        role="user", text=text, framework_item=encode_item(user_message_item(text))
    )


def replay_items(messages: Sequence[AgentMessage]) -> list[InputItem]:
    """The stored conversation as the input list of the next run: new items the run owns."""
    return [json.loads(message.framework_item) for message in messages]


def decode_item(framework_item: str) -> InputItem:
    item: InputItem = json.loads(framework_item)
    return item


def stored_items(turn: AgentTurnContext, messages: Sequence[AgentMessage]) -> list[InputItem]:
    """The stored items parsed once per session: shared values, never to be changed."""
    return [turn.parsed(message, decode_item) for message in messages]


def _content_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    parts = [
        part.get("text") or part.get("refusal") for part in content if isinstance(part, Mapping)
    ]
    texts = [part for part in parts if isinstance(part, str)]
    return "".join(texts) if texts else None


def _output_text(output: Any) -> str:
    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)


def _message_role(item: Mapping[str, Any]) -> MessageRole:
    return "assistant" if item.get("role") == "assistant" else "user"


def project_item(item: Mapping[str, Any], tool_names: Mapping[str, str]) -> FrameworkMessage:
    """The stored projection of one input item: role, display text and tool fields."""
    kind = item.get("type")
    encoded = encode_item(item)
    if kind == "function_call":
        return FrameworkMessage(
            role="assistant",
            framework_item=encoded,
            tool_call_id=item.get("call_id"),
            tool_name=item.get("name"),
            tool_arguments=item.get("arguments"),
        )
    if kind == "function_call_output":
        call_id = item.get("call_id")
        return FrameworkMessage(
            role="tool",
            framework_item=encoded,
            tool_call_id=call_id,
            tool_name=tool_names.get(call_id) if isinstance(call_id, str) else None,
            tool_output=_output_text(item.get("output")),
        )
    if kind in (None, "message"):
        return FrameworkMessage(
            role=_message_role(item),
            framework_item=encoded,
            text=_content_text(item.get("content")),
        )
    if kind == "reasoning":
        return FrameworkMessage(role="assistant", framework_item=encoded)
    # Hosted tool calls and other items the SDK ran itself; they replay as they are.
    name = item.get("name")
    return FrameworkMessage(
        role="assistant",
        framework_item=encoded,
        tool_call_id=item.get("call_id") or item.get("id"),
        tool_name=name if isinstance(name, str) else str(kind),
    )


def function_call_names(items: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    return {
        item["call_id"]: item["name"]
        for item in items
        if item.get("type") == "function_call"
        and isinstance(item.get("call_id"), str)
        and isinstance(item.get("name"), str)
    }


def project_items(items: Sequence[Mapping[str, Any]]) -> list[FrameworkMessage]:
    names = function_call_names(items)
    return [project_item(item, names) for item in items]


def answered_call_ids(items: Iterable[Mapping[str, Any]]) -> set[str]:
    return {
        item["call_id"]
        for item in items
        if item.get("type") == "function_call_output" and isinstance(item.get("call_id"), str)
    }


def function_call_output(call_id: str, output: str) -> InputItem:
    return {"type": "function_call_output", "call_id": call_id, "output": output}
