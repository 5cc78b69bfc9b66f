"""The effect table: which Step runs a tool call, how often, and whether it needs approval."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .errors import InvalidInputError, InvalidToolEffectError
from .types import ToolEffect
from .validation import identifier, path_segment_problem

TOOL_EFFECTS: tuple[ToolEffect, ...] = (
    "read",
    "idempotent_write",
    "non_idempotent_write",
    "unclassified",
)


@dataclass(frozen=True)
class EffectRule:
    """The Step that runs a call of the effect (its attempts are that Step's own option, 3 for
    CallTool and 1 for CallSingleAttemptTool), and whether it needs approval by default."""

    step_type: str
    default_requires_approval: bool


EFFECT_TABLE: Mapping[ToolEffect, EffectRule] = {
    "read": EffectRule("CallTool", False),
    "idempotent_write": EffectRule("CallTool", False),
    "non_idempotent_write": EffectRule("CallSingleAttemptTool", True),
    "unclassified": EffectRule("CallSingleAttemptTool", True),
}


@dataclass(frozen=True)
class ToolPolicy:
    """Per-tool override of the effect table. `None` fields fall back to the defaults."""

    effect: ToolEffect | None = None
    requires_approval: bool | None = None


def resolve_tool_policy(
    tool_name: str,
    policies: Mapping[str, ToolPolicy],
    default_effect: ToolEffect,
    *,
    framework_effect: ToolEffect | None = None,
    framework_requires_approval: bool | None = None,
) -> ToolPolicy:
    """An explicit ToolPolicy wins, then framework metadata, then the session default."""
    explicit = policies.get(tool_name, ToolPolicy())
    effect = explicit.effect or framework_effect or default_effect
    requires_approval = explicit.requires_approval
    if requires_approval is None:
        requires_approval = framework_requires_approval
    if requires_approval is None:
        requires_approval = EFFECT_TABLE[effect].default_requires_approval
    return ToolPolicy(effect=effect, requires_approval=requires_approval)


def hint_effect(read_only: bool | None, idempotent: bool | None) -> ToolEffect | None:
    """The effect MCP tool annotations give, whichever SDK read them: readOnlyHint is read;
    idempotentHint is idempotent_write whatever destructiveHint says; anything else leaves
    the effect to the session's policies and default."""
    if read_only:
        return "read"
    if idempotent:
        return "idempotent_write"
    return None


def declared_effect(
    tool_name: str,
    effect: object,
    *,
    read_only_hint: object = None,
    idempotent_hint: object = None,
) -> ToolEffect | None:
    """The effect a framework's tool declares, the one rule of every adapter: its `effect`
    metadata when it has one, else its MCP hints (`hint_effect`; only a hint that is `True`
    counts), else None (the session's policies and default decide).

    An `effect` that is not one of `TOOL_EFFECTS` raises `InvalidToolEffectError` naming the tool
    and the valid values: a misspelt effect is never dropped in favour of the hints or the
    session's default, which would run the tool under a policy nobody chose."""
    if effect is not None:
        if isinstance(effect, str) and effect in TOOL_EFFECTS:
            return effect
        raise InvalidToolEffectError(
            f"tool {tool_name!r} declares effect {effect!r}, which is not one of "
            f"{', '.join(TOOL_EFFECTS)}: correct the effect in the tool's metadata"
        )
    return hint_effect(read_only_hint is True, idempotent_hint is True)


def idempotency_key(flow_id: str, turn_id: str, tool_call_id: str) -> str:
    return f"{flow_id}/{turn_id}/{tool_call_id}"


def stored_name_problem(name: str, what: str) -> str | None:
    """Why a name from the model cannot be stored in an ID column (the rule of every ID:
    at most 255 characters, no control characters), or None."""
    try:
        identifier(name, what)
    except InvalidInputError as error:
        return f"{error} (it begins {name[:40]!r})"
    return None


def tool_call_id_problem(tool_call_id: str, seen: set[str]) -> str | None:
    """Why a tool call ID is unusable, or None when it is fine."""
    if not tool_call_id:
        return "a tool call ID must not be empty"
    problem = stored_name_problem(tool_call_id, "tool call ID")
    if problem:
        return problem
    problem = path_segment_problem(tool_call_id, "tool call ID")
    if problem:
        return problem
    if tool_call_id in seen:
        return f"tool call ID {tool_call_id!r} is used twice in one turn"
    return None
