"""What an ADK tool's own metadata says about its effect and its approval."""

from __future__ import annotations

from dex_agents.policy import declared_effect
from dex_agents.types import ToolEffect
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.mcp_tool.mcp_tool import McpTool

from ._compat import made_to_require_confirmation


def framework_effect(tool: BaseTool) -> ToolEffect | None:
    """`custom_metadata={"effect": ...}` on the tool, else the annotations of an MCP
    toolset's tool (the core's `declared_effect`); None when neither says. An effect that is
    not one raises `InvalidToolEffectError`, naming the tool."""
    annotations = tool.raw_mcp_tool.annotations if isinstance(tool, McpTool) else None
    return declared_effect(
        tool.name,
        (tool.custom_metadata or {}).get("effect"),
        # ADK pins the 1.x `mcp` SDK, whose `ToolAnnotations` name the hints in camelCase.
        read_only_hint=annotations.readOnlyHint if annotations else None,
        idempotent_hint=annotations.idempotentHint if annotations else None,
    )


def requires_confirmation(tool: BaseTool | None) -> bool | None:
    """A FunctionTool made with `require_confirmation=True`, or an MCP toolset's tool whose
    toolset was, asks for an approval. A `require_confirmation` callable is not evaluated."""
    if isinstance(tool, FunctionTool | McpTool) and made_to_require_confirmation(tool):
        return True
    return None
