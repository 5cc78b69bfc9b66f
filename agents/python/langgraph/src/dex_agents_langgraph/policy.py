"""What a LangChain tool's own metadata says about its effect, read by the core's one rule
(`dex_agents.policy.declared_effect`)."""

from __future__ import annotations

from collections.abc import Iterable

from dex_agents.policy import declared_effect
from dex_agents.types import ToolEffect
from langchain_core.tools import BaseTool

EFFECT_TAG = "effect:"


def framework_effect(tool: BaseTool) -> ToolEffect | None:
    """`metadata={"effect": ...}` or a tag `effect:<value>` on the tool; None when neither.
    An effect that is not one raises `InvalidToolEffectError`, naming the tool."""
    effect = (tool.metadata or {}).get("effect")
    if effect is None:
        effect = next(
            (tag.removeprefix(EFFECT_TAG) for tag in tool.tags or () if tag.startswith(EFFECT_TAG)),
            None,
        )
    return declared_effect(tool.name, effect)


def check_framework_effects(tools: Iterable[BaseTool]) -> None:
    """Raises `InvalidToolEffectError` for the first tool whose declared effect is not one, so a
    misspelt effect fails when the runner is built rather than when the model calls it."""
    for tool in tools:
        framework_effect(tool)
