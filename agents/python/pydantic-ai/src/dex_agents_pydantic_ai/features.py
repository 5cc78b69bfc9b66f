"""The session's features in a Pydantic AI run: built-in tools, plan mode, the context summary.

The enabled built-ins (`dex_agents.builtins`) are offered as an `ExternalToolset`, so Pydantic
AI validates and defers their calls like any other tool's; the session runs them in its own
Steps. A planning turn offers only `write_todos` (the run's tools are filtered by the
`ToolCatalog`), and the plan note is a user message before the turn's messages. The context
summary is a user message first in the history, after the system instructions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from dex_agents import texts
from dex_agents.builtins import BUILT_IN_TOOL_DEFINITIONS, BUILT_IN_TOOL_NAMES, build_plan_note
from dex_agents.runner import AgentTurnContext, BuiltInToolName, DeferredToolCall, ToolPolicy
from pydantic_ai import Agent, UserError
from pydantic_ai.messages import ModelMessage, ModelRequest, UserPromptPart
from pydantic_ai.toolsets import ExternalToolset, FunctionToolset

from .messages import load_history
from .tool_sources import tool_definition

BUILT_IN_TOOLSET_ID: Final = "dex-agents-built-in-tools"
BUILT_IN_POLICY: Final = ToolPolicy(effect="read", requires_approval=False)
"""The policy of a built-in call: the session's built-in Steps run it, never a tool Step."""


def check_no_built_in_names(agent: Agent[Any, Any]) -> None:
    """Refuses an agent whose own function tools take a built-in tool's name: Pydantic AI
    refuses two tools of one name in a run, so such a session could not offer the built-in."""
    for toolset in agent.toolsets:
        if not isinstance(toolset, FunctionToolset):
            continue
        taken = sorted(set(toolset.tools) & set(BUILT_IN_TOOL_NAMES))
        if taken:
            raise UserError(
                f"dex-agents-pydantic-ai: the agent's tool {taken[0]!r} has the name of a "
                "dex-agents built-in tool (ask_user, durable_wait, write_todos); rename it"
            )


def offered_built_ins(turn: AgentTurnContext) -> list[BuiltInToolName]:
    """The built-ins this model call offers: the enabled ones, only write_todos when planning."""
    enabled = turn.enabled_built_in_tools
    if planning(turn):
        return ["write_todos"] if "write_todos" in enabled else []
    return [name for name in BUILT_IN_TOOL_NAMES if name in enabled]


def planning(turn: AgentTurnContext) -> bool:
    return turn.interaction_mode == "planning"


def built_in_toolset(turn: AgentTurnContext) -> ExternalToolset[Any] | None:
    names = offered_built_ins(turn)
    if not names:
        return None
    definitions = [tool_definition(BUILT_IN_TOOL_DEFINITIONS[name]["function"]) for name in names]
    return ExternalToolset(definitions, id=BUILT_IN_TOOLSET_ID)


def built_in_call(
    turn: AgentTurnContext, tool_call_id: str, name: str, arguments: str
) -> DeferredToolCall | None:
    """The deferred call of an enabled built-in (the session routes it by name), or None."""
    if name not in turn.enabled_built_in_tools:
        return None
    return DeferredToolCall(
        tool_call_id=tool_call_id, tool_name=name, arguments=arguments, policy=BUILT_IN_POLICY
    )


def summary_request(turn: AgentTurnContext) -> ModelRequest | None:
    if turn.context_summary is None:
        return None
    text = f"{texts.CONTEXT_SUMMARY_PREFIX}\n{turn.context_summary.text}"
    return ModelRequest(parts=[UserPromptPart(text)])


def with_turn_notes(turn: AgentTurnContext, stored: Sequence[ModelMessage]) -> list[ModelMessage]:
    """The stored history with the summary first and the plan note before the turn's own
    stored messages (its user message, a plan approval), as the session's contract places
    them. Neither is stored: each model call adds them from the turn."""
    history = list(stored)
    note = build_plan_note(turn.plan, turn.interaction_mode)
    if note is not None:
        current = [m for m in turn.messages if m.turn_id == turn.turn_id]
        start = len(history) - len(load_history(current)) if current else len(history)
        history.insert(max(start, 0), ModelRequest(parts=[UserPromptPart(note)]))
    summary = summary_request(turn)
    if summary is not None:
        history.insert(0, summary)
    return history
