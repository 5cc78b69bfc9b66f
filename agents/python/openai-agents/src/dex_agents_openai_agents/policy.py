"""What the SDK's own tool metadata says about a call's effect and approval."""

from __future__ import annotations

import inspect
import json
from typing import Any

from agents import FunctionTool, RunContextWrapper
from dex_agents.policy import declared_effect
from dex_agents.types import ToolEffect


def framework_effect(tool: FunctionTool) -> ToolEffect | None:
    """The effect an MCP tool's annotations declare, by the core's rule (`declared_effect`):
    readOnlyHint is read, idempotentHint is idempotent_write whatever destructiveHint says. A
    FunctionTool has no metadata of its own to declare an effect in."""
    annotations = tool.mcp_annotations
    if annotations is None:
        return None
    return declared_effect(
        tool.name,
        None,
        read_only_hint=_hint(annotations, "read_only_hint", "readOnlyHint"),
        idempotent_hint=_hint(annotations, "idempotent_hint", "idempotentHint"),
    )


def _hint(annotations: object, *names: str) -> bool:
    # MCP 2 spells the hints in snake_case, MCP 1 in camelCase.
    return any(getattr(annotations, name, None) is True for name in names)


def _arguments_object(arguments: str) -> dict[str, Any]:
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


async def framework_requires_approval(
    tool: FunctionTool, context: RunContextWrapper[Any], arguments: str, call_id: str
) -> bool | None:
    """True when the application's tool asks for approval of this call, so dex-agents runs the
    approval; None leaves it to the effect's default."""
    setting = tool.needs_approval
    if isinstance(setting, bool):
        return True if setting else None
    decision: Any = setting(context, _arguments_object(arguments), call_id)
    if inspect.isawaitable(decision):
        decision = await decision
    return True if decision else None
