"""What an ADK tool's own metadata says about its effect and its approval."""

from __future__ import annotations

from typing import cast, get_args

from dex_agents.policy import hint_effect
from dex_agents.types import ToolEffect
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.mcp_tool.mcp_tool import McpTool
from mcp.types import ToolAnnotations

_EFFECTS: tuple[str, ...] = get_args(ToolEffect)


def framework_effect(tool: BaseTool) -> ToolEffect | None:
    """`custom_metadata={"effect": ...}` on the tool, else the annotations of an MCP
    toolset's tool; None when neither says."""
    effect = (tool.custom_metadata or {}).get("effect")
    if effect is None:
        return mcp_annotation_effect(tool)
    if effect not in _EFFECTS:
        raise ValueError(
            f"tool {tool.name!r} declares effect {effect!r}; expected one of {_EFFECTS}"
        )
    return cast(ToolEffect, effect)


def mcp_annotation_effect(tool: BaseTool) -> ToolEffect | None:
    """The effect an ADK `McpTool`'s MCP annotations give (the core's `hint_effect`); None
    for another tool. ADK pins the 1.x `mcp` SDK, whose `ToolAnnotations` name the hints in
    camelCase, so `dex_agents.mcp` (2.x) is not used here."""
    if not isinstance(tool, McpTool):
        return None
    annotations: ToolAnnotations | None = tool.raw_mcp_tool.annotations
    if annotations is None:
        return None
    return hint_effect(annotations.readOnlyHint, annotations.idempotentHint)


def requires_confirmation(tool: BaseTool | None) -> bool | None:
    """A FunctionTool made with `require_confirmation=True`, or an MCP toolset's tool whose
    toolset was, asks for an approval. A `require_confirmation` callable is not evaluated."""
    if isinstance(tool, FunctionTool | McpTool) and tool._require_confirmation is True:
        return True
    return None
