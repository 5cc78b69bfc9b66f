"""The basic app in a Worker whose workflows hand over after two inline Steps, as a release
with a shorter chain would record them (see test_routing)."""

from __future__ import annotations

from dex_agents import runtime

from .basic import flows

runtime.MAX_INLINE_STEPS = 2

__all__ = ["flows"]
