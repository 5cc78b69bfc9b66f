"""The session's event stream: an append-only log per session whose offset is the resume token.

Events written inside a Step's commit share its transaction. Events a model call streams
(text and reasoning deltas) are buffered and flushed every few milliseconds, so a long answer
costs a handful of commits instead of one per token; what is left when the call ends is
written first in the attempt's own commit, so deltas always precede the turn's end.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Mapping
from typing import Any

from . import store
from .db import Database
from .store import EventRecord
from .types import AgentEvent


class StreamingEventWriter:
    """The event writer a runner gets during a model or tool call. Thread-safe."""

    def __init__(
        self,
        database: Database,
        session_id: str,
        *,
        turn_id: str | None,
        attempt: int,
        step_execution_id: str,
        flush_interval: float = 0.03,
        leftovers: list[EventRecord] | None = None,
    ) -> None:
        self._database = database
        self._session_id = session_id
        self._turn_id = turn_id
        self._attempt = attempt
        self._step_execution_id = step_execution_id
        self._flush_interval = flush_interval
        self._buffer: list[EventRecord] = []
        self._lock = threading.Lock()
        self._flusher: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        # Where `close` leaves the records it has not written, for the attempt's commit to
        # write (None: `close` writes them itself).
        self._leftovers = leftovers

    def start(self) -> None:
        self._flusher = asyncio.get_running_loop().create_task(self._flush_periodically())

    def write(self, type: str, payload: Mapping[str, Any]) -> None:
        record = EventRecord(
            type=type,
            turn_id=self._turn_id,
            attempt=self._attempt,
            payload=dict(payload),
            step_execution_id=self._step_execution_id,
        )
        with self._lock:
            self._buffer.append(record)

    async def flush(self) -> None:
        with self._lock:
            records, self._buffer = self._buffer, []
        if records:
            await self._database.write(
                lambda conn: store.append_events_unlocked(conn, self._session_id, records)
            )

    async def close(self) -> None:
        """Stops the periodic flush without cancelling a write in progress (a cancelled write
        would lose the records it had taken), then writes what is left, or hands it to the
        attempt's commit."""
        self._stopping.set()
        if self._flusher is not None:
            await asyncio.shield(self._flusher)
            self._flusher = None
        if self._leftovers is None:
            await self.flush()
            return
        with self._lock:
            self._leftovers.extend(self._buffer)
            self._buffer = []

    async def _flush_periodically(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), timeout=self._flush_interval)
            if self._stopping.is_set():
                return  # what is left is `close`'s: written there, or by the attempt's commit
            await self.flush()


def event_from_row(row: Any) -> AgentEvent:
    return AgentEvent(
        type=row.type,
        turn_id=row.turn_id,
        attempt=row.attempt,
        payload=row.payload,
        step_execution_id=row.step_execution_id,
        offset=row.offset,
        created_at=row.created_at,
    )


async def read_events(
    database: Database, session_id: str, *, after: int = 0, limit: int = 1000
) -> list[AgentEvent]:
    rows = await database.read(lambda conn: store.read_events(conn, session_id, after, limit))
    return [event_from_row(row) for row in rows]
