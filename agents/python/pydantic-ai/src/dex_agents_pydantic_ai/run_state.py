"""The framework run state a turn keeps between its model Steps.

It holds the turn's native messages after its user messages, as ModelMessagesTypeAdapter JSON,
plus the tool calls the last model response deferred, and those of them held back behind a
sequential tool (sequential.py). The session stores nothing of the turn
until it ends, so the run state is the turn's whole transcript so far.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import NotRequired

from pydantic import ConfigDict, TypeAdapter, ValidationError, with_config
from pydantic_ai.messages import ModelMessage
from typing_extensions import TypedDict

from .sequential import HeldCall

RUN_STATE_VERSION = 1


@with_config(ConfigDict(ser_json_bytes="base64", val_json_bytes="base64"))
class _Stored(TypedDict):
    """The stored JSON, in one pass each way: binary content as base64, as Pydantic AI's
    `ModelMessagesTypeAdapter` writes and reads it."""

    version: int
    messages: list[ModelMessage]
    pending_tool_call_ids: list[str]
    retry_rounds: int
    held: NotRequired[list[HeldCall]]


_STORED = TypeAdapter(_Stored)


@dataclass(frozen=True)
class RunState:
    messages: list[ModelMessage] = field(default_factory=list)
    pending_tool_call_ids: tuple[str, ...] = ()
    # Model calls in a row that ended in a retry request (invalid arguments, output retries).
    retry_rounds: int = 0
    # Deferred calls not handed to the session yet: the groups behind a sequential call.
    held: tuple[HeldCall, ...] = ()

    def to_json(self) -> str:
        stored: _Stored = {
            "version": RUN_STATE_VERSION,
            "messages": self.messages,
            "pending_tool_call_ids": list(self.pending_tool_call_ids),
            "retry_rounds": self.retry_rounds,
            "held": list(self.held),
        }
        return _STORED.dump_json(stored).decode()

    @classmethod
    def from_json(cls, text: str | None) -> RunState:
        if not text:
            return cls()
        try:
            stored = _STORED.validate_json(text)
        except ValidationError:
            _check_version(json.loads(text).get("version"))
            raise
        _check_version(stored["version"])
        return cls(
            messages=stored["messages"],
            pending_tool_call_ids=tuple(stored["pending_tool_call_ids"]),
            retry_rounds=stored["retry_rounds"],
            held=tuple(stored.get("held", ())),
        )


def _check_version(version: object) -> None:
    if version != RUN_STATE_VERSION:
        raise ValueError(f"unknown Pydantic AI run state version {version!r}")
