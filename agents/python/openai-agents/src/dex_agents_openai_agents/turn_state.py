"""The framework run state dex-agents stores while a turn waits for its tool calls."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from dex_agents.types import AgentUsage

from .items import InputItem

# Version 2 may keep the run's original input out of `run_state` (see `history_through`);
# version 1 states, written before, always hold it and still load.
_VERSION = 2
_READABLE_VERSIONS = (1, 2)


@dataclass(frozen=True)
class TurnState:
    """`RunState.to_json()` plus what the adapter needs to finish or abandon the turn."""

    run_state: dict[str, Any]
    # How many stored items the turn's run started from; the turn's own items follow them.
    input_count: int
    # The turn's items so far, the pending function calls included, without their outputs.
    turn_items: list[InputItem]
    # The run's cumulative usage when it stopped, so the next Step reports only its own.
    usage: AgentUsage
    # Set when `run_state` holds an empty `original_input` in place of the history the run
    # started from: the stored messages through this sequence, rebuilt from them on restore,
    # so the run state does not grow with the session's history.
    history_through: int | None = None
    # The last sequence the session's context summary covered when the state was saved (0:
    # none). A compaction since then leaves out the summarized messages on restore.
    summary_through: int = 0

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": _VERSION,
                "run_state": self.run_state,
                "input_count": self.input_count,
                "turn_items": self.turn_items,
                "usage": self.usage.model_dump(),
                "history_through": self.history_through,
                "summary_through": self.summary_through,
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> TurnState:
        data = json.loads(text)
        if data.get("version") not in _READABLE_VERSIONS:
            version = data.get("version")
            raise ValueError(f"unsupported OpenAI Agents turn state version {version!r}")
        return cls(
            run_state=data["run_state"],
            input_count=data["input_count"],
            turn_items=data["turn_items"],
            usage=AgentUsage.model_validate(data["usage"]),
            history_through=data.get("history_through"),
            summary_through=data.get("summary_through", 0),
        )
