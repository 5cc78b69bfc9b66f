"""What a tool's `ToolContext` did besides its result, carried from its tool Step to the turn.

A tool runs in its own tool Step, outside the invocation: its writes to `tool_context.state`,
its `tool_context.actions` (escalate, transfer_to_agent, skip_summarization) and the artifacts
it saved (`artifacts.py`) would stay in that Step. `execute_deferred_tool_call` returns them
as the record's framework data (`ToolActions` JSON); the core stores it with the call's record
and gives it back on `AgentToolCall.framework_data` to the RunModel Step that resumes the
turn. There the confirmation's payload carries it to the call's gate, which sets it on its own
`ToolContext`: ADK records it on the call's function response event, as if the tool had run
there, so the state delta is applied to the session, an escalation takes effect, a transfer
runs its target agent next (`transfers.pending_transfer`), and the event (and with it the
delta and the artifacts) is stored with the turn's messages.

The RunModel Step builds its session from the stored messages and the run state of the Step
that asked for the call, which never holds that function response; so each attempt of that
Step (a Worker killed between the two included) applies the actions once, on a fresh session.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from google.adk.events.event_actions import EventActions
from google.adk.tools.tool_context import ToolContext

from .artifacts import Save, carried_json, carried_parts

PAYLOAD_ACTIONS = "dex_agents_actions"
"""The key of a confirmation payload that holds the call's carried actions."""


@dataclass(frozen=True)
class ToolActions:
    """The parts of a tool's `EventActions` that outlive its tool Step."""

    state_delta: dict[str, Any] = field(default_factory=dict)
    artifacts: list[list[Any]] = field(default_factory=list)
    """The artifacts the tool saved, in order (`artifacts.carried_json`)."""
    escalate: bool | None = None
    transfer_to_agent: str | None = None
    skip_summarization: bool | None = None

    @classmethod
    def of(cls, actions: EventActions, saved: list[Save]) -> ToolActions:
        return cls(
            dict(actions.state_delta),
            carried_json(saved),
            actions.escalate,
            actions.transfer_to_agent,
            actions.skip_summarization,
        )

    def is_empty(self) -> bool:
        return self == ToolActions()

    def to_json(self) -> str:
        data = {
            "state_delta": self.state_delta,
            "artifacts": self.artifacts,
            "escalate": self.escalate,
            "transfer_to_agent": self.transfer_to_agent,
            "skip_summarization": self.skip_summarization,
        }
        kept = {k: v for k, v in data.items() if v not in (None, {}, [])}
        return json.dumps(kept, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> ToolActions:
        data = json.loads(text)
        return cls(
            dict(data.get("state_delta", {})),
            list(data.get("artifacts", [])),
            data.get("escalate"),
            data.get("transfer_to_agent"),
            data.get("skip_summarization"),
        )

    async def apply(self, context: ToolContext) -> None:
        """Sets these actions on the call's context in the RunModel Step: its state (read by
        the callbacks that follow), its artifacts saved again in the Step's artifact service
        (which sets `artifact_delta`), and the flags."""
        for key, value in self.state_delta.items():
            context.state[key] = value
        for filename, part in carried_parts(self.artifacts):
            await context.save_artifact(filename, part)
        actions = context.actions
        if self.escalate is not None:
            actions.escalate = self.escalate
        if self.transfer_to_agent is not None:
            actions.transfer_to_agent = self.transfer_to_agent
        actions.skip_summarization = self.skip_summarization
