"""Sessions move from a busy Worker to a less busy one, between turns.

A session runs on the Worker that claimed its first Step, and each of its Steps runs on the
Worker where the Step before it ended, with one exception: when a turn begins (the Step
that waited for the user's message has ended), a Worker that runs clearly more sessions
than the least busy live Worker of the flow type enqueues the turn's first Step on the flow
type's queue instead of running it. Every Worker of the flow type is woken by that commit
and the least busy claims it first (see `dequeue.py`); the session's later Steps, and its
wait for the next message, run there.

What a Worker runs is counted the way DBOS records it: its `PENDING` Step workflows (a
session waiting for a message holds one, a running turn one per parallel branch). Which
Workers live is what the Worker's lease read at its last beat (`liveness.py`); while another
live Worker shares a flow type, each Worker reads the counts of all Workers every few seconds
(a Worker alone reads nothing), and counts each session it
hands over as the other Worker's and no longer its own at once, and for a while after the
next reads too (until both Workers' counts surely show it), so that one look never hands
over more than the difference and sessions never go back and forth.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .clock import utc_now
from .db import Database
from .dbos_internals import workflow_status
from .liveness import seems_live
from .types import WorkerInfo

log = logging.getLogger("dex_agents")

BALANCE_SECONDS_ENV = "DEX_AGENTS_BALANCE_SECONDS"
DEFAULT_BALANCE_SECONDS = 2.0
# A Worker hands a session over only when it runs more than this many sessions more than the
# least busy one, and more than a fifth more: a move costs a claim through the queue, and
# counts that change by a branch or two must not make sessions go back and forth.
MIN_EXCESS = 2
MIN_EXCESS_FRACTION = 0.2
# How long a session handed over counts for the Worker it went to, besides what the counts
# say: a woken Worker claims it within milliseconds, the queue's poll within a second.
MOVE_SETTLE_SECONDS = 1.5


def balance_seconds() -> float:
    return float(os.environ.get(BALANCE_SECONDS_ENV, DEFAULT_BALANCE_SECONDS))


class Balancer:
    """Decides, when a turn begins, whether this Worker hands the session to another."""

    def __init__(
        self,
        database: Database,
        worker_id: str,
        flow_types: Sequence[str],
        step_workflow: str,
        workers: Callable[[], Sequence[WorkerInfo]],
        interval: float | None = None,
    ) -> None:
        """`workers`: every Worker's row as this Worker last read it (its lease's)."""
        self.database = database
        self.workers = workers
        self.worker_id = worker_id
        self.flow_types = set(flow_types)
        self.step_workflow = step_workflow
        self.interval = balance_seconds() if interval is None else interval
        # Live peers that host each flow type, and the sessions each Worker runs.
        self._peers: dict[str, list[str]] = {}
        self._load: dict[str, int] = {}
        # When each recent hand-over happened, and to which Worker.
        self._moves: list[tuple[float, str]] = []

    async def run_forever(self) -> None:
        while True:
            try:
                await self.refresh()
            except Exception as error:  # the counts stay as they were; a move can wait
                log.debug("could not read the Workers' load: %s", error)
            await asyncio.sleep(self.interval)

    async def refresh(self) -> None:
        peers = _live_peers(self.workers(), self.worker_id, self.flow_types)
        load: dict[str, int] = {}
        if peers:
            load = await self.database.read(self._count_step_workflows)
        if peers != self._peers:
            log.info("Worker %s shares its flow types with %s", self.worker_id, _describe(peers))
        settled = time.monotonic() - MOVE_SETTLE_SECONDS
        self._moves = [(at, worker) for at, worker in self._moves if at > settled]
        for _, worker_id in self._moves:
            load[worker_id] = load.get(worker_id, 0) + 1
            load[self.worker_id] = load.get(self.worker_id, 0) - 1
        self._peers, self._load = peers, load

    def should_move(self, flow_type: str) -> bool:
        """Whether to hand the session whose turn begins to a less busy Worker; a yes counts
        the move at once."""
        peers = self._peers.get(flow_type)
        if not peers:
            return False
        mine = self._load.get(self.worker_id, 0)
        least = min(peers, key=lambda worker_id: self._load.get(worker_id, 0))
        theirs = self._load.get(least, 0)
        if mine - theirs <= max(MIN_EXCESS, MIN_EXCESS_FRACTION * mine):
            return False
        self._load[self.worker_id] = mine - 1
        self._load[least] = theirs + 1
        self._moves.append((time.monotonic(), least))
        return True

    def excess(self, flow_type: str, running: int) -> int:
        """How many more Step workflows this Worker runs (`running`, counted now) than the
        least busy live Worker that hosts `flow_type` (at its last count); 0 when no other
        Worker hosts it."""
        peers = self._peers.get(flow_type)
        if not peers:
            return 0
        least = min(self._load.get(worker_id, 0) for worker_id in peers)
        return max(0, running - least)

    def _count_step_workflows(self, conn: Connection) -> dict[str, int]:
        workflows = workflow_status(conn)
        rows = conn.execute(
            sa.select(workflows.c.executor_id, sa.func.count())
            .where(workflows.c.name == self.step_workflow, workflows.c.status == "PENDING")
            .group_by(workflows.c.executor_id)
        )
        return {str(executor): int(count) for executor, count in rows}


def _describe(peers: dict[str, list[str]]) -> str:
    if not peers:
        return "no live Worker"
    return "; ".join(f"{flow}: {', '.join(sorted(ids))}" for flow, ids in sorted(peers.items()))


def _live_peers(
    workers: Sequence[WorkerInfo], worker_id: str, flow_types: set[str]
) -> dict[str, list[str]]:
    now = utc_now()
    peers: dict[str, list[str]] = {}
    for worker in workers:
        if worker.worker_id == worker_id or not seems_live(worker, now):
            continue
        for flow_type in flow_types.intersection(worker.flow_types):
            peers.setdefault(flow_type, []).append(worker.worker_id)
    return peers
