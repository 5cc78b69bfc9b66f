"""Tool effects from MCP annotations."""

from __future__ import annotations

from mcp.types import ToolAnnotations

from ..types import ToolEffect


def annotation_effect(annotations: ToolAnnotations | None) -> ToolEffect | None:
    """readOnlyHint is read; idempotentHint is idempotent_write whatever destructiveHint
    says; anything else leaves the effect to the session's policies and default."""
    if annotations is None:
        return None
    if annotations.read_only_hint:
        return "read"
    if annotations.idempotent_hint:
        return "idempotent_write"
    return None
