"""The session's built-in tools (ask_user, durable_wait, write_todos) as SDK function tools.

Each is a gated `FunctionTool` with the built-in's name, description and JSON schema: it always
needs approval, so the SDK stops the run at its call, and the session (not the SDK) runs it in
the contract's built-in Steps; on resume the tool answers with the recorded result. A planning
turn offers only write_todos; a call of any other tool in it is answered with the contract's
planning-turn rejection, by the SDK, without running anything.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any, Final

from agents import FunctionTool
from agents.run_config import ToolErrorFormatter, ToolErrorFormatterArgs
from dex_agents.builtins import (
    BUILT_IN_TOOL_DEFINITIONS,
    BUILT_IN_TOOL_NAMES,
    PLANNING_TURN_REJECTION,
)
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


def planning_error_formatter(app_formatter: ToolErrorFormatter | None) -> ToolErrorFormatter:
    """The tool error formatter of a planning turn's run (whose tool-not-found calls the SDK
    answers instead of failing): a call of a tool the turn does not offer gets the planning
    rejection; any other error is the application's formatter's, if any."""

    async def format_error(args: ToolErrorFormatterArgs[Any]) -> str | None:
        if args.kind == "tool_not_found":
            return PLANNING_TURN_REJECTION
        if app_formatter is None:
            return None
        message = app_formatter(args)
        return await message if inspect.isawaitable(message) else message

    return format_error
