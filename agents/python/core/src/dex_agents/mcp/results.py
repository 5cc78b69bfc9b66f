"""A `tools/call` result (or a completed task's) as the call's outcome."""

from __future__ import annotations

import json

from mcp.types import CallToolResult

from ..runner import ToolExecutionError, ToolExecutionResult


def result_of(server: str, tool: str, result: CallToolResult) -> ToolExecutionResult:
    text = content_text(result)
    if result.is_error:
        raise ToolExecutionError(text or f"MCP tool {tool} of server {server} failed")
    return ToolExecutionResult(text)


def content_text(result: CallToolResult) -> str:
    parts: list[str] = []
    for block in result.content:
        text = getattr(block, "text", None)
        parts.append(text if isinstance(text, str) else block.model_dump_json(by_alias=True))
    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content)
    return "\n".join(parts)
