"""Tool effects from MCP annotations."""

from __future__ import annotations

from mcp.types import ToolAnnotations

from ..policy import hint_effect
from ..types import ToolEffect


def annotation_effect(annotations: ToolAnnotations | None) -> ToolEffect | None:
    """The effect of an MCP tool's annotations (see `hint_effect`)."""
    if annotations is None:
        return None
    return hint_effect(annotations.read_only_hint, annotations.idempotent_hint)
