"""The session's built-in tools (ask_user, durable_wait, write_todos) as SDK function tools.

Each is a gated `FunctionTool` with the built-in's name, description and JSON schema: it always
needs approval, so the SDK stops the run at its call, and the session (not the SDK) runs it in
the contract's built-in Steps; on resume the tool answers with the recorded result. A planning
turn offers only write_todos.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from agents import FunctionTool
from dex_agents.builtins import BUILT_IN_TOOL_DEFINITIONS, BUILT_IN_TOOL_NAMES
from dex_agents.runner import AgentTurnContext, BuiltInToolName, ToolPolicy

from .gating import answer_with_recorded_result

BUILT_IN_POLICY: Final = ToolPolicy(effect="read", requires_approval=False)
"""A built-in call needs no approval of its own: the session's built-in Steps decide."""


def _gated_built_in(name: BuiltInToolName) -> FunctionTool:
    function = BUILT_IN_TOOL_DEFINITIONS[name]["function"]
    return FunctionTool(
        name=function["name"],
        description=function["description"],
        params_json_schema=dict(function["parameters"]),
        on_invoke_tool=answer_with_recorded_result,
        # ask_user has optional arguments, which strict schemas cannot express.
        strict_json_schema=False,
        needs_approval=True,
    )


# One object per built-in: a gated graph is kept per tool set, keyed by the tools' identity.
_TOOLS: Final = {name: _gated_built_in(name) for name in BUILT_IN_TOOL_NAMES}


def built_in_tools(enabled: Iterable[str]) -> list[FunctionTool]:
    """The enabled built-ins, in the contract's order."""
    wanted = set(enabled)
    return [_TOOLS[name] for name in BUILT_IN_TOOL_NAMES if name in wanted]


def planning_tools(turn: AgentTurnContext) -> list[FunctionTool]:
    """What a planning turn offers: write_todos when it is enabled, else nothing."""
    return built_in_tools(["write_todos"]) if "write_todos" in turn.enabled_built_in_tools else []


def is_built_in_call(turn: AgentTurnContext, name: str) -> bool:
    return name in turn.enabled_built_in_tools
