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
Worker that hosts the flow type: each sleeps until the earliest due time of its flow types
(one indexed read, through a partial index over the parked rows with a due time), and a
commit that parks a Step with a due time wakes every Worker's loop to read it again, so
nothing polls while nothing is due. Due Steps are woken the same way as by a commit.

The one part of DBOS this uses is `DBOSClient.enqueue_in_transaction`, a public API
(`StepEnqueuer`, which a client's `start_session` and `cancel_turn` use too).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from sqlalchemy.engine import Connection

from . import store
from .errors import WorkerError
from .routing import (
    DRIVER_VERSION,
    STEP_WORKFLOW,
    step_queue_name,
    step_workflow_id,
    wake_workflow_id,
)

if TYPE_CHECKING:
    from dbos import DBOSClient

# A Worker's hot window by default: how long a waiting Step stays in memory before it parks.
# A wake from parked costs one workflow enqueued and claimed (a few milliseconds), a hot
# wait a coroutine and a look at the database every 30 s for as long as it waits.
DEFAULT_HOT_WINDOW_SECONDS = 10.0
# The Worker's environment variable for its hot window (the Worker reads it; so does a
# runner's warm path, whose entries live no longer: warm_states.py).
HOT_WINDOW_ENV = "DEX_AGENTS_HOT_WINDOW_SECONDS"
# The longest a Worker's due-time loop sleeps without a look: it catches a wake-up that never
# came (a park commits with one, and a lost feed wakes every wait when it comes back).
DUE_RESCAN_SECONDS = 5.0
# How long the loop waits before it tries again after a failed look.
DUE_RETRY_SECONDS = 0.5
# The most due Steps one look wakes; the next look takes the rest.
DUE_BATCH = 500


def hot_window_setting(explicit: float | None, environ: Mapping[str, str]) -> float:
    """`explicit`, else DEX_AGENTS_HOT_WINDOW_SECONDS, else the default: the Worker's hot window,
    which a runner's warm entries do not outlive either (warm_states.py)."""
    if explicit is None:
        text = environ.get(HOT_WINDOW_ENV)
        if not text:
            return DEFAULT_HOT_WINDOW_SECONDS
        try:
            explicit = float(text)
        except ValueError:
            raise WorkerError(
                f"{HOT_WINDOW_ENV} must be a number of seconds, not {text!r}"
            ) from None
    if not explicit >= 0:
        raise WorkerError(f"the hot window must be 0 seconds or more, not {explicit}")
    return explicit


class StepEnqueuer:
    """Enqueues Step workflows on their flow type's queue in the caller's transaction: a
    session's first Step (a client's `start_session`), a cancellation's, a parked Step's
    wake. The one place outside the Worker's driver where dex-agents calls DBOS."""

    def __init__(self, database_url: str) -> None:
        self._database_url = database_url
        self._client: DBOSClient | None = None
        self._lock = threading.Lock()

    def enqueue(
        self,
        conn: Connection,
        flow_type: str,
        session_id: str,
        step_execution_id: str,
        wake: int = 0,
    ) -> None:
        """Enqueues the workflow that drives a Step execution (`wake` > 0: a parked Step's
        wake), and wakes the Workers that host the flow type, which claim it at once."""
        workflow_id = (
            wake_workflow_id(session_id, step_execution_id, wake)
            if wake
            else step_workflow_id(session_id, step_execution_id)
        )
        # A first run takes the two arguments every release's driver takes.
        args: tuple[str | int, ...] = (
            (session_id, step_execution_id, wake) if wake else (session_id, step_execution_id)
        )
        self._dbos_client().enqueue_in_transaction(
            conn,
            {
                "queue_name": step_queue_name(flow_type),
                "workflow_name": STEP_WORKFLOW,
                "workflow_id": workflow_id,
                "app_version": DRIVER_VERSION,
            },
            *args,
        )
        store.wake(conn, store.queue_wake_key(flow_type))

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


def wake_parked(conn: Connection, keys: Iterable[str], enqueuer: StepEnqueuer) -> set[str]:
    """Wakes the parked Steps of the sessions a commit woke; returns their flow types."""
    return _wake(conn, store.parked_steps(conn, keys), enqueuer)


def wake_due(
    conn: Connection, now: float, flow_types: Sequence[str], enqueuer: StepEnqueuer
) -> set[str]:
    """Wakes the parked Steps of these flow types whose due time came; returns the flow
    types it woke Steps of."""
    return _wake(conn, store.due_steps(conn, now, flow_types, DUE_BATCH), enqueuer)


def _wake(conn: Connection, parked: Iterable[store.ParkedStep], enqueuer: StepEnqueuer) -> set[str]:
    flow_types: set[str] = set()
    for step in parked:
        if store.unpark_step(conn, step):
            enqueuer.enqueue(
                conn, step.flow_type, step.session_id, step.step_execution_id, step.wakes + 1
            )
            flow_types.add(step.flow_type)
    return flow_types
