"""Worker liveness: heartbeats, and the takeover of a Worker that is gone.

Each Worker keeps a row in `dex_workers` and bumps its beat counter a few times per lease.
Every Worker watches the other rows on its own monotonic clock, so the hosts' clocks never
need to agree: a counter that has not moved for a whole lease, or a row that says its Worker
stopped cleanly, means that Worker's unfinished Step executions go back to the queues through
DBOS recovery, which admits exactly one runner per workflow, and a live Worker runs them.

Taking over is safe even when the Worker was only stalled: every Step attempt is fenced by its
attempt number, so a late commit of the old attempt changes nothing, and a single-attempt tool
whose attempt had started records `outcome_unknown` instead of running again.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from . import db
from .clock import now_text, parse_time
from .db import Database
from .types import WorkerInfo

log = logging.getLogger("dex_agents")

LEASE_SECONDS_ENV = "DEX_AGENTS_WORKER_LEASE_SECONDS"
DEFAULT_LEASE_SECONDS = 15.0
# Beats per lease: a Worker whose beat is late by a few intervals still keeps its lease.
BEATS_PER_LEASE = 5
# How often a Worker reads the others' rows.
WATCH_SECONDS = 1.0

RecoverWorkflows = Callable[[list[str]], int]


def lease_seconds(explicit: float | None = None) -> float:
    value = explicit if explicit is not None else os.environ.get(LEASE_SECONDS_ENV)
    seconds = DEFAULT_LEASE_SECONDS if value is None else float(value)
    if seconds <= 0:
        raise ValueError(f"the Worker lease must be positive, not {seconds:g} s")
    return seconds


@dataclass
class _Observed:
    beats: int
    since: float  # this process's monotonic clock when the count last moved


class WorkerLease:
    """Keeps this Worker's heartbeat and takes over the Workers whose heartbeat stopped."""

    def __init__(
        self,
        database: Database,
        worker_id: str,
        flow_types: Collection[str],
        recover: RecoverWorkflows,
        *,
        lease_seconds: float,
    ) -> None:
        self.database = database
        self.worker_id = worker_id
        self.flow_types = sorted(flow_types)
        self.recover = recover
        self.lease_seconds = lease_seconds
        self._observed: dict[str, _Observed] = {}

    @property
    def interval(self) -> float:
        return self.lease_seconds / BEATS_PER_LEASE

    async def register(self) -> None:
        await self.database.write(self._register)

    async def run_forever(self) -> None:
        tick = min(self.interval, WATCH_SECONDS)
        last_beat = last_look = time.monotonic()
        while True:
            # Look at the others often, so a clean stop is taken over at once; beat per lease.
            await asyncio.sleep(tick)
            if time.monotonic() - last_look > 2 * tick + self.interval:
                # This Worker itself was stalled or cut off: what it saw is stale, and the
                # others could not beat either. Watch for a whole lease again.
                self._observed.clear()
            try:
                if time.monotonic() - last_beat >= self.interval:
                    await self.beat()
                    last_beat = time.monotonic()
                await self.take_over_lost_workers()
                last_look = time.monotonic()
            except Exception:
                log.exception("the Worker heartbeat failed; trying again")

    async def beat(self) -> None:
        beat = self.database.write(lambda conn: self._bump(conn, state="running"))
        if not await beat:
            # Another Worker presumed this one gone and took its Steps over; fencing keeps
            # any attempt still running here from committing over the new one.
            log.warning(
                "Worker %s missed its lease and its Steps were taken over; it goes on with new "
                "work",
                self.worker_id,
            )
            await self.database.write(self._register)

    async def release(self) -> None:
        """A clean stop: the other Workers take this one's waiting Steps over at once."""
        await self.database.write(lambda conn: self._bump(conn, state="stopped"))

    async def take_over_lost_workers(self) -> None:
        rows = await self.database.read(list_workers)
        # Forget Workers whose rows are gone, so the observations stay as many as the rows.
        present = {row.worker_id for row in rows}
        self._observed = {k: v for k, v in self._observed.items() if k in present}
        for row in rows:
            if row.worker_id != self.worker_id and self._lost(row):
                await self._take_over(row)

    def _lost(self, row: WorkerInfo) -> bool:
        now = time.monotonic()
        seen = self._observed.get(row.worker_id)
        if seen is None or seen.beats != row.beats:
            seen = self._observed[row.worker_id] = _Observed(row.beats, now)
        if not set(row.flow_types) <= set(self.flow_types):
            return False  # its sessions need flows this Worker does not host
        return row.state == "stopped" or now - seen.since >= self.lease_seconds

    async def _take_over(self, row: WorkerInfo) -> None:
        recovered = await asyncio.to_thread(self.recover, [row.worker_id])

        def forget(conn: Connection) -> int:
            # Only the row as observed: a Worker that came back has moved its counter.
            query = db.workers.delete().where(
                db.workers.c.worker_id == row.worker_id, db.workers.c.beats == row.beats
            )
            return int(conn.execute(query).rowcount)

        if await self.database.write(forget):
            self._observed.pop(row.worker_id, None)
            why = "stopped" if row.state == "stopped" else "missed its lease"
            log.warning(
                "Worker %s %s; Worker %s took over its %d unfinished Step executions",
                row.worker_id,
                why,
                self.worker_id,
                recovered,
            )

    def _register(self, conn: Connection) -> None:
        values = {
            "state": "running",
            "flow_types": ",".join(self.flow_types),
            "lease_seconds": self.lease_seconds,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "started_at": now_text(),
        }
        if not self._bump(conn, **values):
            conn.execute(
                db.workers.insert().values(
                    worker_id=self.worker_id, beats=0, heartbeat_at=now_text(), **values
                )
            )

    def _bump(self, conn: Connection, **values: object) -> bool:
        """Moves this Worker's beat counter (and sets `values`); False when its row is gone."""
        result = conn.execute(
            db.workers.update()
            .where(db.workers.c.worker_id == self.worker_id)
            .values(beats=db.workers.c.beats + 1, heartbeat_at=now_text(), **values)
        )
        return bool(result.rowcount)


def seems_live(worker: WorkerInfo, now: datetime) -> bool:
    """Running, and its last heartbeat (by its own clock) within a lease of `now`."""
    beat = parse_time(worker.heartbeat_at)
    return worker.state == "running" and (
        beat is None or (now - beat).total_seconds() <= worker.lease_seconds
    )


def list_workers(conn: Connection) -> list[WorkerInfo]:
    rows = conn.execute(sa.select(db.workers).order_by(db.workers.c.worker_id))
    return [
        WorkerInfo(
            worker_id=row.worker_id,
            state=row.state,
            beats=row.beats,
            flow_types=[t for t in row.flow_types.split(",") if t],
            lease_seconds=row.lease_seconds,
            host=row.host,
            pid=row.pid,
            started_at=row.started_at,
            heartbeat_at=row.heartbeat_at,
        )
        for row in rows
    ]
