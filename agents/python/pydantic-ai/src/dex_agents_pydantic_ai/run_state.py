"""The framework run state a turn keeps between its model Steps.

It holds the turn's native messages after its user messages, as ModelMessagesTypeAdapter JSON,
plus the tool calls the last model response deferred, and those of them held back behind a
sequential tool (sequential.py). The session stores nothing of the turn
until it ends, so the run state is the turn's whole transcript so far.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter

from .sequential import HeldCall

RUN_STATE_VERSION = 1


@dataclass(frozen=True)
class RunState:
    messages: list[ModelMessage] = field(default_factory=list)
    pending_tool_call_ids: tuple[str, ...] = ()
    # Model calls in a row that ended in a retry request (invalid arguments, output retries).
    retry_rounds: int = 0
    # Deferred calls not handed to the session yet: the groups behind a sequential call.
    held: tuple[HeldCall, ...] = ()

    def to_json(self) -> str:
        payload: dict[str, Any] = {
            "version": RUN_STATE_VERSION,
            "messages": json.loads(ModelMessagesTypeAdapter.dump_json(self.messages)),
            "pending_tool_call_ids": list(self.pending_tool_call_ids),
            "retry_rounds": self.retry_rounds,
            "held": list(self.held),
        }
        return json.dumps(payload, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | None) -> RunState:
        if not text:
            return cls()
        payload = json.loads(text)
        if payload.get("version") != RUN_STATE_VERSION:
            raise ValueError(f"unknown Pydantic AI run state version {payload.get('version')!r}")
        return cls(
            # Through JSON again, so binary content decodes from base64 as it was written.
            messages=ModelMessagesTypeAdapter.validate_json(json.dumps(payload["messages"])),
            pending_tool_call_ids=tuple(payload["pending_tool_call_ids"]),
            retry_rounds=int(payload["retry_rounds"]),
            held=tuple(payload.get("held", ())),
        )
