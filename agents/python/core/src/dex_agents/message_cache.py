"""A Worker's cache of stored messages: they never change once stored, so each session's list
is loaded once and extended by what was appended since."""

from __future__ import annotations

from bisect import bisect_right
from collections import OrderedDict

from sqlalchemy.engine import Connection

from . import store
from .runner import FrameworkItemCache
from .types import AgentMessage


class MessageCache:
    """Stored messages never change, so a Worker keeps each session's list and loads only
    what was appended since: a Step costs the same at message 10 and at message 100,000."""

    def __init__(self, capacity: int = 256) -> None:
        self._capacity = capacity
        # session -> (the sequence the list starts after, the messages in order)
        self._sessions: OrderedDict[str, tuple[int, list[AgentMessage]]] = OrderedDict()
        # session -> what its runner parsed of those messages; evicted with them
        self._parsed: dict[str, FrameworkItemCache] = {}

    def framework_items(self, session_id: str) -> FrameworkItemCache:
        """The parsed framework items of a session the cache holds; a new, empty memo for
        one it does not (it then lives only as long as its caller keeps it)."""
        if session_id not in self._sessions:
            return FrameworkItemCache()
        items = self._parsed.get(session_id)
        if items is None:
            items = self._parsed[session_id] = FrameworkItemCache()
        return items

    def load(
        self, conn: Connection, session_id: str, through: int, after: int = 0
    ) -> list[AgentMessage]:
        """The stored messages with sequences in (after, through]."""
        start, cached = self._sessions.pop(session_id, (after, []))
        if start > after:  # the cache begins later than asked: load the whole range
            start, cached = after, []
        # Sequences are sorted: trimming is a bisection, not a scan of a long history.
        sequences = (
            [m.sequence for m in cached]
            if cached and (cached[0].sequence <= after or cached[-1].sequence > through)
            else None
        )
        if sequences is not None:
            cached = cached[bisect_right(sequences, after) : bisect_right(sequences, through)]
        last = cached[-1].sequence if cached else after
        if last < through:
            cached = cached + [
                m
                for m in store.load_messages(conn, session_id, after_sequence=last)
                if m.sequence <= through
            ]
        self._sessions[session_id] = (after, cached)
        if (parsed := self._parsed.get(session_id)) is not None:
            parsed.retain(after, through)
        while len(self._sessions) > self._capacity:
            evicted, _ = self._sessions.popitem(last=False)
            self._parsed.pop(evicted, None)
        return list(cached)
