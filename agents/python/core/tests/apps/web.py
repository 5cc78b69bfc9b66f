"""The Worker app of the web tests: the basic assistant (tools with effects and approvals) and
the planner (questions, plan mode) in one Worker."""

from __future__ import annotations

from . import basic, planning

flows = [*basic.flows, *planning.flows]
