"""The Claude Code transcript as the session's records carry it.

The turn's final assistant message carries, in its framework item, the transcript entries the
CLI wrote during the turn (by subpath: "" is the main transcript, others are subagents'), the
session ID the CLI resumes by, and the turn's cost. The whole transcript is the entries of all
earlier turns, in order.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from claude_agent_sdk import SessionStoreEntry
from dex_agents.types import AgentMessage

KIND = "claude_agent_sdk.turn"
USER_KIND = "claude_agent_sdk.user"


@dataclass(frozen=True)
class TurnTranscript:
    session_id: str
    entries: dict[str, list[SessionStoreEntry]]
    cost_usd: float | None = None
    result: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(
            {
                "kind": KIND,
                "session_id": self.session_id,
                "entries": self.entries,
                "cost_usd": self.cost_usd,
                "result": self.result,
            }
        )


def parse_turn(framework_item: str) -> TurnTranscript | None:
    """The transcript part a stored message carries, or None for any other message."""
    try:
        data = json.loads(framework_item)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("kind") != KIND:
        return None
    return TurnTranscript(
        session_id=str(data["session_id"]),
        entries={str(k): list(v) for k, v in dict(data["entries"]).items()},
        cost_usd=data.get("cost_usd"),
        result=dict(data.get("result") or {}),
    )


@dataclass(frozen=True)
class History:
    """What the stored messages say about the CLI session before this turn."""

    session_id: str | None
    entries: dict[str, list[SessionStoreEntry]]
    prompts: tuple[str, ...]
    """The user texts since the last completed turn, in order: the turn's prompt."""


def history_of(messages: Sequence[AgentMessage]) -> History:
    """The transcript of the earlier turns, and the user text since the last of them."""
    session_id: str | None = None
    entries: dict[str, list[SessionStoreEntry]] = {}
    prompt: list[str] = []
    for message in messages:
        turn = parse_turn(message.framework_item) if message.role == "assistant" else None
        if turn is not None:
            session_id = turn.session_id
            for subpath, part in turn.entries.items():
                entries.setdefault(subpath, []).extend(part)
            prompt = []
        elif message.role == "user" and message.text:
            prompt.append(message.text)
    return History(session_id, entries, tuple(prompt))


@dataclass(frozen=True)
class RunState:
    """A turn stopped for a deferred write call: what its CLI runs wrote so far (the transcript
    entries the next run resumes from, and the turn's messages not stored yet)."""

    session_id: str
    entries: dict[str, list[SessionStoreEntry]]
    messages: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> str:
        data = {"session_id": self.session_id, "entries": self.entries, "messages": self.messages}
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str | None) -> RunState | None:
        if not text:
            return None
        data = json.loads(text)
        return cls(str(data["session_id"]), dict(data["entries"]), list(data["messages"]))


def merged(*parts: dict[str, list[SessionStoreEntry]]) -> dict[str, list[SessionStoreEntry]]:
    """Transcript entries of several runs, in order, by subpath."""
    entries: dict[str, list[SessionStoreEntry]] = {}
    for part in parts:
        for subpath, items in part.items():
            entries.setdefault(subpath, []).extend(items)
    return entries


def without_prompt_snapshots(entries: list[SessionStoreEntry]) -> list[SessionStoreEntry]:
    """The entries without the CLI's `prompt_snapshot` attachments, each entry that pointed at
    one linked to that one's parent instead.

    The CLI records the system prompt and the tools of a session's first request in such an
    attachment and, once resumed, sends the recorded ones instead of those of the run's
    options: the session settings could then never change the instructions, nor a planning
    turn its tools. Without them, each run records its own."""
    parents: dict[str, Any] = {}
    for entry in entries:
        if _is_prompt_snapshot(entry):
            parents[str(entry.get("uuid"))] = entry.get("parentUuid")
    if not parents:
        return entries
    return [_relinked(entry, parents) for entry in entries if not _is_prompt_snapshot(entry)]


def _is_prompt_snapshot(entry: SessionStoreEntry) -> bool:
    attachment = entry.get("attachment")
    return isinstance(attachment, dict) and attachment.get("type") == "prompt_snapshot"


def _relinked(entry: SessionStoreEntry, parents: dict[str, Any]) -> SessionStoreEntry:
    changed: dict[str, Any] = {}
    for link in ("parentUuid", "leafUuid"):
        target = entry.get(link)
        if target not in parents:
            continue
        while target in parents:
            target = parents[target]
        changed[link] = target
    return cast(SessionStoreEntry, {**entry, **changed}) if changed else entry
