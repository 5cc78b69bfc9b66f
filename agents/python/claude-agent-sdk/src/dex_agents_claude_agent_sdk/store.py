"""A `SessionStore` whose transcript lives in the session's own records.

The runner fills it, before a turn, with the entries recorded by the earlier turns (they are in
the session's stored messages, see `transcript.py`), and reads back after the turn the entries
the CLI appended during it. Nothing is kept elsewhere, so a Worker on another host resumes the
same transcript from the database.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable

from claude_agent_sdk import SessionKey, SessionStoreEntry
from claude_agent_sdk.types import SessionListSubkeysKey

_Key = tuple[str, str, str]


def _key(key: SessionKey) -> _Key:
    return (key["project_key"], key["session_id"], key.get("subpath") or "")


class RecordSessionStore:
    """Transcript entries in memory, per (project, session, subpath), in append order.

    Entries with a ``uuid`` are idempotent (a repeated batch adds nothing); `appended` is what
    this store received since it was made, the part a turn adds to the session's records.
    It implements the SDK's `SessionStore` protocol: `append`, `load` and `list_subkeys`."""

    def __init__(self) -> None:
        self._entries: dict[_Key, list[SessionStoreEntry]] = {}
        self._uuids: dict[_Key, set[str]] = {}
        self._appended: dict[_Key, list[SessionStoreEntry]] = {}

    def preload(self, key: SessionKey, entries: Iterable[SessionStoreEntry]) -> None:
        """Entries recorded earlier: loadable, but not part of `appended`."""
        self._add(_key(key), list(entries), record=False)

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        self._add(_key(key), entries, record=True)

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        entries = self._entries.get(_key(key))
        return None if entries is None else copy.deepcopy(entries)

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        project, session = key["project_key"], key["session_id"]
        return [sub for (p, s, sub) in self._entries if p == project and s == session and sub]

    def appended(self) -> dict[str, list[SessionStoreEntry]]:
        """The entries appended since the store was made, by subpath ("" for the main one)."""
        found: dict[str, list[SessionStoreEntry]] = {}
        for (_, _, subpath), entries in self._appended.items():
            found.setdefault(subpath, []).extend(entries)
        return found

    def _add(self, key: _Key, entries: list[SessionStoreEntry], *, record: bool) -> None:
        stored = self._entries.setdefault(key, [])
        uuids = self._uuids.setdefault(key, set())
        for entry in entries:
            uuid = entry.get("uuid")
            if isinstance(uuid, str):
                if uuid in uuids:
                    continue
                uuids.add(uuid)
            kept: SessionStoreEntry = json.loads(json.dumps(entry))
            stored.append(kept)
            if record:
                self._appended.setdefault(key, []).append(kept)
