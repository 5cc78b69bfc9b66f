"""The canary of dbos_internals.py: every DBOS internal dex-agents uses, as it uses it. An
upgrade of `dbos` that renames a parameter, moves a function or drops a column fails here, by
name, before any Worker misbehaves."""

from __future__ import annotations

import inspect

import sqlalchemy as sa
from dbos import DBOS
from dbos._core import ActiveWorkflowById, execute_dequeued_workflow
from dbos._schemas.system_database import SystemSchema
from dbos._sys_db import SystemDatabase
from dbos._utils import GlobalParams

from dex_agents import dbos_internals


def parameters(function: object) -> list[str]:
    return list(inspect.signature(function).parameters)  # type: ignore[arg-type]


def test_the_queue_claim_is_the_call_the_queue_thread_makes() -> None:
    assert parameters(SystemDatabase.start_queued_workflows)[:6] == [
        "self",
        "queue",
        "executor_id",
        "app_version",
        "queue_partition_key",
        "local_running_count",
    ]
    assert "owner_xid" in parameters(SystemDatabase.start_queued_workflows)
    assert parameters(SystemDatabase.get_workflow_statuses) == ["self", "workflow_ids"]
    assert parameters(execute_dequeued_workflow) == ["dbos", "status", "owner_xid"]
    assert isinstance(GlobalParams.executor_id, str)
    assert isinstance(GlobalParams.app_version, str)


def test_the_process_keeps_its_workflows_and_its_queue_counts_where_they_are_read() -> None:
    source = inspect.getsource(DBOS.__init__)
    assert 'self._workflow_tasks: set["asyncio.Task[Any]"]' in source
    assert "self._active_workflows_set: ActiveWorkflowById" in source
    assert parameters(ActiveWorkflowById.count_for_queue) == ["self", "queue_name"]


def test_the_workflow_table_has_the_columns_read_and_stamped() -> None:
    table = SystemSchema.workflow_status
    assert table.name == dbos_internals.WORKFLOW_STATUS_TABLE
    for name, kind in dbos_internals.WORKFLOW_STATUS_COLUMNS.items():
        assert name in table.c, name
        column_type = table.c[name].type
        wanted = sa.Integer if kind is sa.BigInteger else sa.String
        assert isinstance(column_type, wanted), (name, column_type)


def test_the_internal_queue_and_the_background_jobs_poll_where_they_are_slowed() -> None:
    from dbos import _queue, _workflow_commands
    from dbos._dbos import DBOSRegistry

    assert "_polling_interval_sec" in inspect.getsource(_queue.queue_worker_thread)
    assert "get_internal_queue()" in inspect.getsource(_queue.queue_thread)
    assert parameters(DBOSRegistry.get_internal_queue) == ["self"]
    background = inspect.getsource(_workflow_commands.background_jobs_thread)
    assert "_BACKGROUND_JOBS_INTERVAL_SEC" in background
    assert isinstance(_workflow_commands._BACKGROUND_JOBS_INTERVAL_SEC, float)


def test_the_scheduler_and_the_queue_listing_poll_where_they_are_slowed() -> None:
    from dbos import _queue, _scheduler
    from dbos._sys_db import SystemDatabase

    assert "_STARTUP_FAST_POLL_DURATION_SEC" in inspect.getsource(_scheduler.dynamic_scheduler_loop)
    assert isinstance(_scheduler._STARTUP_FAST_POLL_DURATION_SEC, float)
    assert "dbos._sys_db.list_queues(" in inspect.getsource(_queue.queue_thread)
    assert parameters(SystemDatabase.list_queues) == [
        "self",
        "application_name",
        "client_system_database",
    ]


def test_a_slowed_listing_reads_the_database_once_per_interval() -> None:
    calls: list[dict[str, object]] = []

    def list_queues(**options: object) -> list[object]:
        calls.append(options)
        return [f"queue-{len(calls)}"]

    cached = dbos_internals._listed_at_most_every(3600, list_queues)
    assert cached(application_name="app") == ["queue-1"]
    assert cached(application_name="app") == ["queue-1"]
    assert cached(application_name="other") == ["queue-2"]
    assert len(calls) == 2
    fresh = dbos_internals._listed_at_most_every(0, list_queues)
    assert fresh(application_name="app") == ["queue-3"]
    assert fresh(application_name="app") == ["queue-4"]
