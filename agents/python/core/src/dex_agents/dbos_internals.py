"""Every part of DBOS that is not its public API, in one place.

dex-agents uses DBOS's public API (`DBOS`, `Queue`, `SetWorkflowID`, `DBOSClient`) wherever
one exists. Four things have none:

- claiming a queue's enqueued workflows at once, when a commit says they are there, instead
  of on the queue thread's next poll (dequeue.py): `SystemDatabase.start_queued_workflows`
  and `execute_dequeued_workflow`, the calls DBOS's own queue thread makes;
- how many workflows this process runs (the claim delay that spreads new sessions);
- DBOS's `workflow_status` table, which the Worker reads (metrics, the balancer, recovery)
  and stamps (the queue of a Step workflow started outside its queue);
- how often DBOS looks for work dex-agents never gives it: its internal queue (scheduled,
  Kafka and resumed workflows; a Step workflow is always on its flow type's queue) and its
  background jobs (delayed workflows and workflow timeouts), each polled once a second by
  default, the larger part of an idle Worker's CPU; its scheduler's first minute, when it
  looks for schedules every second (dex-agents has none); and its queue thread's listing of
  the queues in the database, every second, to find queues registered since (a Worker
  registers its queues once, at its start).

The `dbos` requirement is pinned to a minor version for this reason, and
tests/test_dbos_internals.py checks every signature, attribute and column used here, so an
upgrade that changes one fails in that one test, by name.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Final

import dbos._scheduler as _scheduler
import dbos._workflow_commands as _workflow_commands
import sqlalchemy as sa
from dbos import Queue
from dbos._core import execute_dequeued_workflow
from dbos._dbos import _get_dbos_instance, _get_or_create_dbos_registry
from dbos._utils import GlobalParams, generate_uuid
from sqlalchemy.engine import Connection

# On Postgres DBOS keeps its tables in a schema of its own (the Worker keeps DBOS's default).
DBOS_SCHEMA: Final = "dbos"
WORKFLOW_STATUS_TABLE: Final = "workflow_status"
# The columns of DBOS's table of workflows that dex-agents reads and stamps.
WORKFLOW_STATUS_COLUMNS: Final[dict[str, type[sa.types.TypeEngine[Any]]]] = {
    "workflow_uuid": sa.Text,
    "status": sa.Text,
    "queue_name": sa.Text,
    "name": sa.Text,
    "executor_id": sa.Text,
    "created_at": sa.BigInteger,
}


def workflow_status(conn: Connection) -> sa.TableClause:
    """DBOS's table of workflows, as far as dex-agents reads and stamps it."""
    schema_name = DBOS_SCHEMA if conn.dialect.name == "postgresql" else None
    columns: list[sa.ColumnClause[Any]] = [
        sa.column(name, kind) for name, kind in WORKFLOW_STATUS_COLUMNS.items()
    ]
    return sa.table(WORKFLOW_STATUS_TABLE, *columns, schema=schema_name)


def has_workflow_status(conn: Connection) -> bool:
    """Whether DBOS ever opened this database (its table of workflows exists)."""
    schema_name = DBOS_SCHEMA if conn.dialect.name == "postgresql" else None
    return sa.inspect(conn).has_table(WORKFLOW_STATUS_TABLE, schema=schema_name)


def claim_and_start(queue: Queue) -> None:
    """Claims the queue's enqueued workflows this process may run and starts them, as DBOS's
    queue thread does on its poll: one atomic ENQUEUED -> PENDING claim, then dispatch."""
    dbos = _get_dbos_instance()
    owner_xid = generate_uuid()
    workflow_ids, _ = dbos._sys_db.start_queued_workflows(
        queue,
        GlobalParams.executor_id,
        GlobalParams.app_version,
        None,
        dbos._active_workflows_set.count_for_queue(queue.name),
        owner_xid=owner_xid,
    )
    if workflow_ids:
        for status in dbos._sys_db.get_workflow_statuses(workflow_ids):
            execute_dequeued_workflow(dbos, status, owner_xid)


def running_workflow_count() -> int:
    """How many workflows this process runs now."""
    return len(_get_dbos_instance()._workflow_tasks)


def slow_unused_housekeeping(seconds: float) -> None:
    """Makes DBOS poll its internal queue and run its background jobs every `seconds` instead
    of every second: dex-agents enqueues nothing on that queue and uses neither delayed
    workflows nor workflow timeouts. Call it before `DBOS.launch()`."""
    _get_or_create_dbos_registry().get_internal_queue()._polling_interval_sec = seconds
    _workflow_commands._BACKGROUND_JOBS_INTERVAL_SEC = seconds
    # No schedules: the scheduler need not look every second in its first minute.
    _scheduler._STARTUP_FAST_POLL_DURATION_SEC = 0.0


def slow_queue_listing(seconds: float) -> None:
    """Makes DBOS's queue thread list the queues in the database every `seconds` instead of
    every second (it reads the list to start a thread for each new queue). Call it once the
    Worker's queues are registered: the next listing, which finds them, is a real one."""
    sys_db = _get_dbos_instance()._sys_db
    sys_db.list_queues = _listed_at_most_every(seconds, sys_db.list_queues)  # type: ignore[method-assign]


def _listed_at_most_every(seconds: float, list_queues: Callable[..., list[Queue]]) -> Any:
    listed: dict[str, tuple[float, list[Queue]]] = {}

    def cached(**options: Any) -> list[Queue]:
        key = repr(sorted(options.items()))
        now = time.monotonic()
        hit = listed.get(key)
        if hit is None or now - hit[0] >= seconds:
            hit = listed[key] = (now, list_queues(**options))
        return list(hit[1])

    return cached
