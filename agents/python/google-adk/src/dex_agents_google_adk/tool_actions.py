"""What a tool's `ToolContext` did besides its result, carried from its tool Step to the turn.

A tool runs in its own tool Step, outside the invocation: its writes to `tool_context.state`
and its `tool_context.actions` (escalate, transfer_to_agent, skip_summarization, the
artifacts it saved) would stay in that Step. `execute_deferred_tool_call` returns them as the
record's framework data (`ToolActions` JSON); the core stores it with the call's record and
gives it back on `AgentToolCall.framework_data` to the RunModel Step that resumes the turn.
There the confirmation's payload carries it to the call's gate, which sets it on its own
`ToolContext`: ADK records it on the call's function response event, as if the tool had run
there, so the state delta is applied to the session, a transfer or an escalation takes
effect, and the event (and with it the delta) is stored with the turn's messages.

The RunModel Step builds its session from the stored messages and the run state of the Step
that asked for the call, which never holds that function response; so each attempt of that
Step (a Worker killed between the two included) applies the actions once, on a fresh session.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from google.adk.events.event_actions import EventActions

PAYLOAD_ACTIONS = "dex_agents_actions"
"""The key of a confirmation payload that holds the call's carried actions."""


@dataclass(frozen=True)
class ToolActions:
    """The parts of a tool's `EventActions` that outlive its tool Step."""

    state_delta: dict[str, Any] = field(default_factory=dict)
    artifact_delta: dict[str, int] = field(default_factory=dict)
    escalate: bool | None = None
    transfer_to_agent: str | None = None
    skip_summarization: bool | None = None

    @classmethod
    def of(cls, actions: EventActions) -> ToolActions:
        return cls(
            dict(actions.state_delta),
            dict(actions.artifact_delta),
            actions.escalate,
            actions.transfer_to_agent,
            actions.skip_summarization,
        )

    def is_empty(self) -> bool:
        return self == ToolActions()

    def to_json(self) -> str:
        data = {
            "state_delta": self.state_delta,
            "artifact_delta": self.artifact_delta,
            "escalate": self.escalate,
            "transfer_to_agent": self.transfer_to_agent,
            "skip_summarization": self.skip_summarization,
        }
        kept = {k: v for k, v in data.items() if v not in (None, {})}
        return json.dumps(kept, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> ToolActions:
        data = json.loads(text)
        return cls(
            dict(data.get("state_delta", {})),
            dict(data.get("artifact_delta", {})),
            data.get("escalate"),
            data.get("transfer_to_agent"),
            data.get("skip_summarization"),
        )

    def apply(self, actions: EventActions) -> None:
        """Sets these actions on the `EventActions` of the call's function response."""
        actions.state_delta.update(self.state_delta)
        actions.artifact_delta.update(self.artifact_delta)
        if self.escalate is not None:
            actions.escalate = self.escalate
        if self.transfer_to_agent is not None:
            actions.transfer_to_agent = self.transfer_to_agent
        actions.skip_summarization = self.skip_summarization
