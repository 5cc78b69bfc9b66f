"""What the model saw in a Chat Completions request of the scripted server."""

from __future__ import annotations

from typing import Any

from dex_agents.testing import ScriptedModelServer
from dex_agents.testing.matrix import chat_completions


def sent(model: ScriptedModelServer, index: int) -> list[dict[str, Any]]:
    """The messages of one model request, system prompts left out."""
    messages: list[dict[str, Any]] = model.requests[index].body["messages"]
    return [m for m in messages if m["role"] != "system"]


def tool_messages(model: ScriptedModelServer, index: int) -> dict[str, str]:
    """The tool results the model saw in one request, by tool call ID."""
    return chat_completions.tool_outputs(model.requests[index])
