"""The ADK run state of a paused turn.

The run state holds only the turn's own events (the invocation's, with its confirmation
bookkeeping) and the calls it waits for; the conversation before the turn is the stored
messages, which every Step appends to a fresh session (`session_service.py`). So the run
state's size depends on the turn, not on the session's history.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from google.adk.events import Event


@dataclass(frozen=True)
class RunState:
    invocation_id: str
    events: list[Event]
    """The turn's events, from its user message on."""
    confirmations: dict[str, str]
    """The `adk_request_confirmation` call ID by the ID of the function call it gates."""
    through_sequence: int
    """The last stored message before the turn's user message."""

    def to_json(self) -> str:
        return json.dumps(
            {
                "invocation_id": self.invocation_id,
                "events": [e.model_dump(mode="json", exclude_none=True) for e in self.events],
                "confirmations": self.confirmations,
                "through_sequence": self.through_sequence,
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> RunState:
        data = json.loads(text)
        return cls(
            data["invocation_id"],
            [Event.model_validate(e) for e in data["events"]],
            data["confirmations"],
            data["through_sequence"],
        )
