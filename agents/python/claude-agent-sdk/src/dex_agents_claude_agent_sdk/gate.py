"""The runner's PreToolUse hook: a write call of an SDK MCP tool or of a tool source's tool is
deferred to a tool Step, and a built-in call to the core's built-in Steps.

For a call of one of the runner's SDK MCP tools or of its tool sources' tools whose effect is
not `read` (explicit `ToolPolicy`, then what the tool declares: its MCP annotations, or a
source's own policy, then `default_tool_effect`), or whose policy
asks for approval, the hook answers `"defer"` when no tool Step has recorded a result for its
tool_use ID yet: the CLI run ends before the tool runs. Once a result is recorded, the resumed
run asks the hook again about the same call: it answers `"allow"` and hands the recorded result
to the server copy, which returns it as the tool's own result. Every other call is left to
the CLI's own permissions.

A call of a built-in the run offers (`mcp__dex__<name>`) is deferred the same way, reported
under the built-in's own name. In a planning turn every call but `write_todos` is denied with
the contract's planning-turn rejection (the run offers no other tool; this is the backstop).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from claude_agent_sdk import HookContext, HookInput, HookJSONOutput
from dex_agents.builtins import PLANNING_TURN_REJECTION
from dex_agents.results import model_visible_result
from dex_agents.runner import AgentTurnContext, DeferredToolCall, ToolPolicy
from dex_agents.types import AgentToolCall, ToolEffect

from . import built_ins
from .sources import Declared
from .texts import ONE_WRITE_AT_A_TIME
from .tools import RecordedResult, RecordedResults


def recorded_results(records: Sequence[AgentToolCall]) -> dict[str, RecordedResult]:
    """The final records of the turn's tool Steps, by tool_use ID, as the model sees them."""
    return {
        record.tool_call_id: RecordedResult(
            model_visible_result(record), is_error=record.status != "succeeded"
        )
        for record in records
        if record.is_final
    }


class WriteGate:
    """One CLI run's PreToolUse hook; `deferred` is the call it stopped the run for (a write
    call, or a call of one of the `built_ins` the run offers)."""

    def __init__(
        self,
        turn: AgentTurnContext,
        effects: Mapping[str, ToolEffect | None],
        handed: RecordedResults,
        built_ins: Sequence[str] = (),
        sources: Mapping[str, Declared] | None = None,
    ) -> None:
        self._turn = turn
        self._effects = effects
        self._sources = sources or {}
        self._recorded = recorded_results(turn.tool_calls)
        self._handed = handed
        self._built_ins = tuple(built_ins)
        self._planning = turn.interaction_mode == "planning"
        self.deferred: list[DeferredToolCall] = []

    async def hook(
        self, data: HookInput, tool_use_id: str | None, _: HookContext
    ) -> HookJSONOutput:
        tool_name = str(data.get("tool_name"))
        arguments: dict[str, Any] = dict(data.get("tool_input") or {})  # type: ignore[call-overload]
        built_in = built_ins.built_in_of(tool_name, self._built_ins)
        if self._planning and built_in != "write_todos":
            return _decision("deny", PLANNING_TURN_REJECTION)
        if tool_use_id is None:
            return {}
        if built_in is not None:
            return self._gate(tool_use_id, tool_name, built_in, arguments, built_ins.POLICY)
        source = self._sources.get(tool_name)
        if source is not None:
            policy = self._turn.resolve_tool_policy(
                tool_name, source.effect, source.requires_approval
            )
        elif tool_name in self._effects:
            policy = self._turn.resolve_tool_policy(tool_name, self._effects[tool_name])
        else:
            return {}
        if policy.effect == "read" and not policy.requires_approval:
            return {}
        reference = source.reference if source is not None else None
        return self._gate(tool_use_id, tool_name, tool_name, arguments, policy, reference)

    def _gate(
        self,
        tool_use_id: str,
        tool_name: str,
        reported_name: str,
        arguments: dict[str, Any],
        policy: ToolPolicy,
        reference: str | None = None,
    ) -> HookJSONOutput:
        """Allows a call whose result a Step recorded (handing the result over), else defers
        it under `reported_name` (a source's tool with its `reference`): one deferred call per
        run."""
        recorded = self._recorded.get(tool_use_id)
        if recorded is not None:
            self._handed.hand_over(tool_name, arguments, recorded)
            return _decision("allow")
        if self.deferred:
            return _decision("deny", ONE_WRITE_AT_A_TIME)
        call = DeferredToolCall(
            tool_use_id,
            reported_name,
            json.dumps(arguments),
            policy=policy,
            tool_source_reference=reference,
        )
        self.deferred.append(call)
        return _decision("defer")


def _decision(decision: str, reason: str | None = None) -> HookJSONOutput:
    output: dict[str, Any] = {"hookEventName": "PreToolUse", "permissionDecision": decision}
    if reason is not None:
        output["permissionDecisionReason"] = reason
    return {"hookSpecificOutput": output}  # type: ignore[typeddict-item]
