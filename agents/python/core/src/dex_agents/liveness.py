"""Worker liveness: heartbeats, and the takeover of a Worker that is gone.

Each Worker keeps a row in `dex_workers` and bumps its beat counter a few times per lease,
reading the other rows in the same transaction. Every Worker watches the other rows on its own
monotonic clock, so the hosts' clocks never need to agree: a counter that has not moved for a
whole lease, or a row that says its Worker stopped cleanly, means that Worker's unfinished Step
executions go back to the queues through DBOS recovery, which admits exactly one runner per
workflow, and a live Worker runs them.

Between beats a Worker reads nothing: a Worker that registers or stops cleanly writes the
wake-up key `store.WORKERS_WAKE_KEY`, which makes the others look at once, and the processes
of the rows of this host are checked every second without the database. On the Worker's own
host a row's pid is exact: a row whose process is gone means a dead Worker at once, so a Worker
restarted on the same host, or SIGKILLed beside another, is taken over without waiting for the
lease. Rows of other hosts are judged by their counter alone. The rows each look read are what
the balancer (`balance.py`) sees of the other Workers.

A Worker ID names one live Worker: `claim` refuses it while the Worker holding it is alive.

Taking over is safe even when the Worker was only stalled: every Step attempt is fenced by its
attempt number, so a late commit of the old attempt changes nothing, and a single-attempt tool
whose attempt had started records `outcome_unknown` instead of running again.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import os
import socket
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from . import db, store
from .clock import now_text, parse_time
from .db import Database
from .errors import WorkerIdInUseError
from .types import WorkerInfo
from .waker import Waker

log = logging.getLogger("dex_agents")

LEASE_SECONDS_ENV = "DEX_AGENTS_WORKER_LEASE_SECONDS"
DEFAULT_LEASE_SECONDS = 15.0
# Beats per lease: a Worker whose beat is late by a few intervals still keeps its lease.
BEATS_PER_LEASE = 5
# How often a Worker checks the processes of its host's rows (no database read), and at
# most how often it waits for a row's process when it claims an ID another host last used.
WATCH_SECONDS = 1.0

# Reads and conditional writes of a Worker's row before its claim gives up.
CLAIM_TRIES = 3

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
        waker: Waker,
    ) -> None:
        self.database = database
        self.worker_id = worker_id
        self.flow_types = sorted(flow_types)
        self.recover = recover
        self.lease_seconds = lease_seconds
        self.waker = waker
        self._observed: dict[str, _Observed] = {}
        # Every Worker's row as the last look read it (this Worker's included).
        self.workers: list[WorkerInfo] = []
        # The rows of this host whose process the last tick found gone (worker ID, beats).
        self._ended: set[tuple[str, int]] = set()

    @property
    def interval(self) -> float:
        return self.lease_seconds / BEATS_PER_LEASE

    async def claim(self) -> None:
        """Registers this Worker under its ID, or raises WorkerIdInUseError while a live Worker
        holds it. A row of another host that still says `running` is watched for up to a
        lease."""
        for _ in range(CLAIM_TRIES):
            row = await self.database.read(lambda conn: _worker_row(conn, self.worker_id))
            if row is not None and row.state == "running" and not same_host(row):
                row = await self._wait_for_silence(row)
            elif row is not None and row.state == "running" and process_alive(row):
                raise _in_use(row, "its process runs")
            try:
                if await self.database.write(functools.partial(self._claim, seen=row)):
                    return
            except sa.exc.IntegrityError:
                pass  # another Worker inserted the row first
            # The row moved since it was read (a takeover, another claimant): judge it again.
        raise WorkerIdInUseError(
            f"other Workers start with ID {self.worker_id!r} at the same time; give each "
            "Worker its own DEX_AGENTS_WORKER_ID (or none)"
        )

    async def _wait_for_silence(self, row: WorkerInfo) -> WorkerInfo | None:
        """The row once its counter stood still for its lease (or it was stopped or removed);
        raises WorkerIdInUseError when the counter moves."""
        log.info(
            "Worker ID %s was last used on host %s; waiting up to %g s (its lease) for it to beat",
            self.worker_id,
            row.host,
            row.lease_seconds,
        )
        deadline = time.monotonic() + row.lease_seconds
        latest: WorkerInfo | None = row
        while time.monotonic() < deadline:
            await asyncio.sleep(min(WATCH_SECONDS, row.lease_seconds / BEATS_PER_LEASE))
            latest = await self.database.read(lambda conn: _worker_row(conn, self.worker_id))
            if latest is None or latest.state == "stopped":
                return latest
            if latest.beats != row.beats:
                raise _in_use(latest, "it beats")
        return latest

    def _claim(self, conn: Connection, *, seen: WorkerInfo | None) -> bool:
        """Registers this Worker, only over the row as `seen` (another claimant moved it)."""
        current = _worker_row(conn, self.worker_id, for_update=True)
        if (current is None) != (seen is None) or (
            current is not None and seen is not None and current.beats != seen.beats
        ):
            return False
        self._register(conn)
        return True

    async def register(self) -> None:
        await self.database.write(self._register)

    async def run_forever(self) -> None:
        """Beats once per interval, reading the others' rows in the beat's transaction; looks
        again at once when a Worker registers or stops (its wake-up key) or a process of a row
        of this host ends, and reads nothing in between."""
        tick = min(self.interval, WATCH_SECONDS)
        last_beat = last_tick = -math.inf
        seen: int | None = None
        while True:
            generation = self.waker.generation(store.WORKERS_WAKE_KEY)
            if time.monotonic() - last_tick > 2 * tick + self.interval:
                # This Worker itself was stalled or cut off: what it saw is stale, and the
                # others could not beat either. Watch for a whole lease again.
                self._observed.clear()
            try:
                if time.monotonic() - last_beat >= self.interval:
                    await self.beat()
                    last_beat = time.monotonic()
                    await self._take_over_lost()
                elif generation != seen or self._host_process_ended():
                    await self.take_over_lost_workers()
                seen = generation
                last_tick = time.monotonic()
            except Exception:
                log.exception("the Worker heartbeat failed; trying again")
            # A tick, or less when a Worker registers or stops.
            await self.waker.wait(store.WORKERS_WAKE_KEY, generation, tick)

    def _host_process_ended(self) -> bool:
        """Whether a running row of this host, as last read, names a process that is gone
        and was not gone at the tick before. A row this Worker may not take over (it does not
        host all of its flow types) stays as it is: it is looked at once, not at every tick."""
        ended = {
            (row.worker_id, row.beats)
            for row in self.workers
            if row.worker_id != self.worker_id
            and row.state == "running"
            and same_host(row)
            and not process_alive(row)
        }
        news, self._ended = bool(ended - self._ended), ended
        return news

    async def beat(self) -> None:
        """Moves this Worker's counter and reads every row, in one transaction."""
        moved, self.workers = await self.database.write(self._beat)
        if not moved:
            # Another Worker presumed this one gone and took its Steps over; fencing keeps
            # any attempt still running here from committing over the new one.
            log.warning(
                "Worker %s missed its lease and its Steps were taken over; it goes on with new "
                "work",
                self.worker_id,
            )
            await self.database.write(self._register)

    def _beat(self, conn: Connection) -> tuple[bool, list[WorkerInfo]]:
        return self._bump(conn, state="running"), list_workers(conn)

    async def release(self) -> None:
        """A clean stop: the other Workers take this one's waiting Steps over at once."""
        await self.database.write(self._release)

    def _release(self, conn: Connection) -> None:
        self._bump(conn, state="stopped")
        store.wake(conn, store.WORKERS_WAKE_KEY)

    async def take_over_lost_workers(self) -> None:
        """Reads every row, and takes over the Workers that are gone."""
        self.workers = await self.database.read(list_workers)
        await self._take_over_lost()

    async def _take_over_lost(self) -> None:
        rows = self.workers
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
            # DBOS recovery would hand all its Steps to this Worker, and some need flows this
            # Worker does not host: a Worker that hosts them all takes it over.
            return False
        if row.state == "stopped":
            return True
        if same_host(row) and not process_alive(row):
            return True  # its process is gone: no need to wait for the lease
        # A live process that stopped beating (stalled) is taken over after its lease too.
        return now - seen.since >= self.lease_seconds

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
            why = "stopped" if row.state == "stopped" else "is gone"
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
        store.wake(conn, store.WORKERS_WAKE_KEY)  # the others see a new peer at once

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


def same_host(row: WorkerInfo) -> bool:
    return row.host == socket.gethostname()


def process_alive(row: WorkerInfo) -> bool:
    """Whether the process of a row of this host may still be its Worker: False when the pid
    is gone, is this process, or was reused by a process that began after the Worker."""
    if row.pid == os.getpid():
        return False  # an earlier Worker of this pid (a restarted container): gone
    try:
        os.kill(row.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    began = _process_start_time(row.pid)
    registered = parse_time(row.started_at).timestamp()
    return began is None or began <= registered + 1.0


def _process_start_time(pid: int) -> float | None:
    """The wall-clock start of a process (Linux /proc), None where it cannot be read."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = next(
            float(line.split()[1])
            for line in Path("/proc/stat").read_text().splitlines()
            if line.startswith("btime ")
        )
        ticks = float(stat.rsplit(")", 1)[1].split()[19])
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def _in_use(row: WorkerInfo, evidence: str) -> WorkerIdInUseError:
    return WorkerIdInUseError(
        f"Worker ID {row.worker_id!r} is in use by a live Worker (pid {row.pid} on "
        f"{row.host}: {evidence}); stop that Worker first, or give this one another "
        "DEX_AGENTS_WORKER_ID (or none, for an ID of its own)"
    )


def _worker_row(conn: Connection, worker_id: str, for_update: bool = False) -> WorkerInfo | None:
    query = sa.select(db.workers).where(db.workers.c.worker_id == worker_id)
    if for_update:
        query = query.with_for_update()
    row = conn.execute(query).first()
    return None if row is None else _worker_info(row)


def list_workers(conn: Connection) -> list[WorkerInfo]:
    rows = conn.execute(sa.select(db.workers).order_by(db.workers.c.worker_id))
    return [_worker_info(row) for row in rows]


def _worker_info(row: sa.Row[Any]) -> WorkerInfo:
    return WorkerInfo(
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
