"""Parked Steps: a Step that waits costs no Worker anything.

A waiting Step (for a message, an approval, an answer, a timer, the turn's tool results, the
next poll of a task) stays in its Worker's memory for a short hot window, so an active chat
wakes as fast as ever. When the window passes and its condition still does not hold, one
transaction, under the session's lock, looks at the condition again and marks the Step
`parked` with its due time, if it has one; its workflow then ends. Nothing of the session
remains in any Worker, and a restart recovers only what runs.

A parked Step is woken by the commit that may satisfy it: every commit that wakes a session
(`store.wake`, which each write of what a waiting Step looks at makes) takes the session's
parked Steps out of their rows and enqueues one wake workflow each, in the same transaction,
on the flow type's queue, which any Worker hosting the flow type may claim. Parking and
waking both hold the session's lock (a write of what a Step waits for locks the session
row first, and SQLite has one writer), so a message committed while the Step parks is
either seen by the park's own look or finds the Step parked: no wake is lost. The row is
taken out of parked only when it still holds the wake number it was read with, so two
commits never wake one Step twice, and each wake has a workflow ID of its own
(`routing.wake_workflow_id`), which DBOS treats as an idempotency key.

A due time (an approval deadline, a timer, the next poll of a task) is claimed by any live
Worker that hosts the flow type: each looks for due rows a few times a second, through a
partial index over the parked rows only, and wakes them the same way.

The one part of DBOS this uses is `DBOSClient.enqueue_in_transaction`, a public API.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from sqlalchemy.engine import Connection

from . import store
from .routing import DRIVER_VERSION, STEP_WORKFLOW, step_queue_name, wake_workflow_id

if TYPE_CHECKING:
    from dbos import DBOSClient

# A Worker's hot window by default: how long a waiting Step stays in memory before it parks.
# A wake from parked costs one workflow enqueued and claimed (a few milliseconds), a hot
# wait a coroutine and a look at the database every 30 s for as long as it waits.
DEFAULT_HOT_WINDOW_SECONDS = 10.0
# How often a Worker looks for parked Steps whose due time came.
DUE_SCAN_SECONDS = 0.5
# The most due Steps one look wakes; the next look takes the rest.
DUE_BATCH = 500


class WakeEnqueuer:
    """Enqueues the wake workflow of a parked Step in the caller's transaction."""

    def __init__(self, database_url: str) -> None:
        self._database_url = database_url
        self._client: DBOSClient | None = None
        self._lock = threading.Lock()

    def enqueue(self, conn: Connection, parked: store.ParkedStep) -> None:
        wake = parked.wakes + 1
        self._dbos_client().enqueue_in_transaction(
            conn,
            {
                "queue_name": step_queue_name(parked.flow_type),
                "workflow_name": STEP_WORKFLOW,
                "workflow_id": wake_workflow_id(parked.session_id, parked.step_execution_id, wake),
                "app_version": DRIVER_VERSION,
            },
            parked.session_id,
            parked.step_execution_id,
            wake,
        )

    def _dbos_client(self) -> DBOSClient:
        with self._lock:
            if self._client is None:
                from dbos import DBOSClient

                from .db import create_dbos_engine

                engine = create_dbos_engine(self._database_url)
                self._client = DBOSClient(system_database_engine=engine, lazy=True)
            return self._client

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.destroy()


def wake_parked(conn: Connection, keys: Iterable[str], enqueuer: WakeEnqueuer) -> set[str]:
    """Wakes the parked Steps of the sessions a commit woke; returns their flow types."""
    return _wake(conn, store.parked_steps(conn, keys), enqueuer)


def wake_due(
    conn: Connection, now: float, flow_types: Sequence[str], enqueuer: WakeEnqueuer
) -> set[str]:
    """Wakes the parked Steps of these flow types whose due time came; returns the flow
    types it woke Steps of."""
    return _wake(conn, store.due_steps(conn, now, flow_types, DUE_BATCH), enqueuer)


def _wake(conn: Connection, parked: Iterable[store.ParkedStep], enqueuer: WakeEnqueuer) -> set[str]:
    flow_types: set[str] = set()
    for step in parked:
        if store.unpark_step(conn, step):
            enqueuer.enqueue(conn, step)
            flow_types.add(step.flow_type)
    for flow_type in flow_types:
        store.wake(conn, store.queue_wake_key(flow_type))
    return flow_types
