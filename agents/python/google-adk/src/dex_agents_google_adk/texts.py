"""Texts the model reads that the ADK runner writes itself."""

from __future__ import annotations

UNKNOWN_TOOL = (
    "the agent has no tool named {name!r} now: no tool of the agent and none its toolsets "
    "list has that name"
)
"""The failure of a tool Step whose tool is gone, e.g. a toolset no longer lists it."""
