"""What an ADK tool's own metadata says about its effect."""

from __future__ import annotations

from typing import cast, get_args

from dex_agents.types import ToolEffect
from google.adk.tools.base_tool import BaseTool

_EFFECTS: tuple[str, ...] = get_args(ToolEffect)


def framework_effect(tool: BaseTool) -> ToolEffect | None:
    """`custom_metadata={"effect": ...}` on the tool; None when it has none."""
    effect = (tool.custom_metadata or {}).get("effect")
    if effect is None:
        return None
    if effect not in _EFFECTS:
        raise ValueError(
            f"tool {tool.name!r} declares effect {effect!r}; expected one of {_EFFECTS}"
        )
    return cast(ToolEffect, effect)
