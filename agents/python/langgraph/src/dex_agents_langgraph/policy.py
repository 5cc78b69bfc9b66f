"""What a LangChain tool's own metadata says about its effect."""

from __future__ import annotations

from typing import cast, get_args

from dex_agents.types import ToolEffect
from langchain_core.tools import BaseTool

_EFFECTS: tuple[str, ...] = get_args(ToolEffect)


def framework_effect(tool: BaseTool) -> ToolEffect | None:
    """`metadata={"effect": ...}` or a tag `effect:<value>` on the tool; None when neither."""
    effect = (tool.metadata or {}).get("effect")
    if effect is None:
        effect = next(
            (tag.removeprefix("effect:") for tag in tool.tags or () if tag.startswith("effect:")),
            None,
        )
    if effect is None:
        return None
    if effect not in _EFFECTS:
        raise ValueError(
            f"tool {tool.name!r} declares effect {effect!r}; expected one of {_EFFECTS}"
        )
    return cast(ToolEffect, effect)
