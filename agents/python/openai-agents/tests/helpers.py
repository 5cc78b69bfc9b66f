"""What the model saw in a Responses request of the scripted server."""

from __future__ import annotations

from typing import Any

from dex_agents.testing import ScriptedModelServer
from dex_agents.testing.matrix import responses


def model_input(model: ScriptedModelServer, request_index: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = model.requests[request_index].body["input"]
    return items


def tool_outputs(model: ScriptedModelServer, request_index: int) -> dict[str, str]:
    """The tool results the model saw in one Responses request, by call ID."""
    return responses.tool_outputs(model.requests[request_index])
