"""Schema upgrades lose nothing: a database written by the released dex-agents (0.2, before
schema versioning) is migrated by the first Worker that starts, and its sessions finish;
migrations run once however many processes start together; a newer database is refused.

The released databases under tests/fixtures/ were written by the released code itself
(tests/fixtures/make_released_db.py): `acme/approval` waits for the approval of `send_email`
and its Worker was killed; `acme/queued` was started while no Worker ran, so its first Step
is enqueued on the released single queue `dex_agents_steps`.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from dex_agents import AgentClient, schema
from dex_agents.db import Database, create_engine, metadata, normalize_url
from dex_agents.errors import SchemaTooNewError
from dex_agents.routing import STEP_QUEUE, STEP_WORKFLOW, step_queue_name
from dex_agents.testing import reply_text, reply_tools

from .helpers import pending_interrupt, step_types, tool_messages, turns_done

FIXTURES = Path(__file__).parent / "fixtures"
APPROVAL, QUEUED = "acme/approval", "acme/queued"
FLOW_QUEUE = "dex_agents_steps:Assistant"
VERSIONS = [
    (1, "baseline, adopted: written before schema versioning"),
    (2, "Step workflows move to the queue of their flow type"),
    (3, "sessions keep the trace context of their activation"),
    (4, "waiting Steps park: a wake counter and a due time per Step"),
    (5, "event logs are bounded, and the metrics' sessions by state are indexed"),
    (6, "a failure route's recovery in its own column, not in its input"),
]


def load_released_database(url: str) -> None:
    """The released fixture, in the fresh database at `url`."""
    engine = sa.create_engine(normalize_url(url))
    if engine.dialect.name == "sqlite":
        shutil.copyfile(FIXTURES / "released-v1.sqlite", str(engine.url.database))
    else:
        dump = (FIXTURES / "released-v1.sql").read_text()
        # psql meta-commands (\restrict) are not SQL.
        script = "\n".join(line for line in dump.splitlines() if not line.startswith("\\"))
        with engine.begin() as conn:
            conn.exec_driver_sql(script)
    engine.dispose()


def query(url: str, sql: str, **params: Any) -> list[tuple[Any, ...]]:
    engine = sa.create_engine(normalize_url(url))
    try:
        with engine.connect() as conn:
            return [tuple(row) for row in conn.execute(sa.text(sql), params)]
    finally:
        engine.dispose()


def workflow_table(url: str) -> str:
    return "workflow_status" if url.startswith("sqlite") else "dbos.workflow_status"


def step_workflows(url: str) -> dict[str, tuple[str, str | None]]:
    """The status and queue of each Step workflow, by workflow ID."""
    rows = query(url, f"SELECT workflow_uuid, status, queue_name FROM {workflow_table(url)}")
    return {row[0]: (row[1], row[2]) for row in rows}


def versions(url: str) -> list[tuple[Any, ...]]:
    return query(url, "SELECT version, description FROM dex_schema_version ORDER BY version")


def table_names(url: str) -> set[str]:
    engine = sa.create_engine(normalize_url(url))
    try:
        inspector = sa.inspect(engine)
        schemas = [None] if engine.dialect.name == "sqlite" else [None, "dbos"]
        return {f"{s}.{t}" for s in schemas for t in inspector.get_table_names(schema=s)}
    finally:
        engine.dispose()


def dex_tables(url: str) -> dict[str, Any]:
    """Columns (name, nullable), primary key and indexes of each dex table, as reflected."""
    engine = sa.create_engine(normalize_url(url))
    try:
        inspector = sa.inspect(engine)
        return {
            name: _shape(
                [(c["name"], c["nullable"]) for c in inspector.get_columns(name)],
                inspector.get_pk_constraint(name)["constrained_columns"],
                [(i["name"], i["column_names"]) for i in inspector.get_indexes(name)],
            )
            for name in inspector.get_table_names()
            if name.startswith("dex_") and name != schema.VERSION_TABLE
        }
    finally:
        engine.dispose()


def declared_tables() -> dict[str, Any]:
    """The same shape for the tables db.py declares."""
    return {
        table.name: _shape(
            [(c.name, bool(c.nullable)) for c in table.columns],
            [c.name for c in table.primary_key.columns],
            [(i.name, [c.name for c in i.columns]) for i in table.indexes],
        )
        for table in metadata.sorted_tables
    }


def _shape(columns: list[Any], primary_key: list[str], indexes: list[Any]) -> dict[str, Any]:
    return {"columns": columns, "primary_key": primary_key, "indexes": sorted(indexes)}


async def test_a_released_database_upgrades_and_its_waiting_and_queued_sessions_finish(
    make_worker, model, client, tool_log, database_url
):
    load_released_database(database_url)
    legacy = {w for w, (_, queue) in step_workflows(database_url).items() if queue == STEP_QUEUE}
    assert legacy == {f"{APPROVAL}/StartAgentSession-1", f"{QUEUED}/StartAgentSession-1"}
    model.enqueue(
        reply_tools(("r1", "get_weather", {"city": "Kyiv"})),
        reply_text("Sunny in Kyiv."),
    )
    with make_worker():
        queued = await client.wait_for(QUEUED, turns_done(1))
        approval = await client.wait_for(APPROVAL, pending_interrupt("w1"))
        model.enqueue(reply_text("Email sent to Ana."))
        assert await client.resolve_interrupt(APPROVAL, "w1", approved=True)
        approval = await client.wait_for(APPROVAL, turns_done(1))

    assert versions(database_url) == VERSIONS
    # The two workflows ran on from their flow type's queue (they now wait for the next
    # user message, still PENDING).
    assert {w: step_workflows(database_url)[w][1] for w in legacy} == dict.fromkeys(
        legacy, FLOW_QUEUE
    )
    assert tool_log.count("get_weather") == 1
    assert tool_log.count("send_email") == 1
    assert len(model.requests) == 3
    assert [m.text for m in queued.messages if m.role != "tool"][-1:] == ["Sunny in Kyiv."]
    assert approval.messages[-1].text == "Email sent to Ana."
    assert await step_types(client, QUEUED) == [
        "StartAgentSession",
        "RunModel",
        "CallTool",
        "ResumeTurn",
        "RunModel",
        "AwaitUserMessage",
    ]
    assert await step_types(client, APPROVAL) == [
        "StartAgentSession",
        "RunModel",
        "AwaitToolApproval",
        "ResumeTurn",
        "CallSingleAttemptTool",
        "RunModel",
        "AwaitUserMessage",
    ]
    # The upgraded database and a fresh one hold the same tables.
    assert dex_tables(database_url) == declared_tables()


@pytest.mark.parametrize("written", ["before the upgrade", "by an older Worker after it"])
async def test_a_failure_route_with_its_recovery_in_its_input_still_recovers(
    written, harness, model, client, tool_log, database_url
):
    """Before schema 6 a failure route's recovery rode in its input. A route written that way
    before the upgrade is moved by migration 6; one that a Worker of the older version writes
    during a rolling upgrade (its recovery column left null) reads the same. Either records
    the call as a route written the new way does."""
    harness.runtime.retry_backoff_seconds = 0.0
    model.enqueue(reply_tools(("b1", "broken_tool", {})), reply_text("The tool is broken."))
    session = await client.start_session("Assistant", "Use the broken tool.")
    while (rows := await harness.runnable(session))[0].step_type != "RecordToolFailure":
        await harness.run(session, rows[0].step_execution_id)
    route = rows[0]
    # Written the new way: the failing CallTool's input, and its recovery beside it.
    assert route.input == '"b1"'
    recovery = json.loads(route.recovery or "null")
    assert recovery["detail"] == "the disk is on fire"
    old_input = json.dumps({"input": "b1", "recovery": recovery}, separators=(",", ":"))
    ids = {"sid": session, "sx": route.step_execution_id}
    engine = sa.create_engine(normalize_url(database_url))
    try:
        with engine.begin() as conn:
            conn.execute(
                sa.text(
                    "UPDATE dex_steps SET input = :old, recovery = NULL "
                    "WHERE session_id = :sid AND step_execution_id = :sx"
                ),
                {"old": old_input, **ids},
            )
            if written == "before the upgrade":
                conn.execute(sa.text("ALTER TABLE dex_steps DROP COLUMN recovery"))
                conn.execute(sa.text("DELETE FROM dex_schema_version WHERE version = 6"))
        if written == "before the upgrade":
            assert schema.migrate(engine) == 5
            moved = query(
                database_url,
                "SELECT input, recovery FROM dex_steps "
                "WHERE session_id = :sid AND step_execution_id = :sx",
                **ids,
            )
            assert [(i, json.loads(r)) for i, r in moved] == [('"b1"', recovery)]
    finally:
        engine.dispose()

    # Driven as by a Worker that did not schedule it: from the row as stored.
    harness.runtime.forget_fresh(session, route.step_execution_id)
    await harness.run_until_idle(session)
    snapshot = await client.wait_for(session, turns_done(1))
    assert tool_log.count("broken_tool") == 3
    assert tool_messages(model, 1) == {"b1": "The tool call failed: the disk is on fire"}
    assert snapshot.messages[-1].text == "The tool is broken."
    history = await client.get_step_history(session)
    assert [s.status for s in history if s.step_type == "RecordToolFailure"] == ["succeeded"]


def test_a_fresh_database_gets_exactly_the_tables_db_py_declares(database_url):
    database = Database(database_url)
    try:
        database.create_schema()
        database.create_schema()  # current: nothing to do
    finally:
        database.close()
    assert dex_tables(database_url) == declared_tables()
    assert [v for v, _ in versions(database_url)] == [v for v, _ in VERSIONS]


def test_migration_2_names_the_queues_the_runtime_uses():
    assert schema.LEGACY_STEP_QUEUE == STEP_QUEUE
    assert schema.flow_type_queue("team/Assistant") == step_queue_name("team/Assistant")
    assert schema.STEP_WORKFLOW == STEP_WORKFLOW


def test_processes_migrating_at_once_migrate_once(database_url):
    """Eight engines race on an empty database; the lock lets one migrate, the others find
    the work done."""
    databases = [Database(database_url) for _ in range(8)]
    start = threading.Barrier(len(databases))
    found: list[int] = []

    def migrate(database: Database) -> None:
        start.wait()
        found.append(schema.migrate(database.engine))

    threads = [threading.Thread(target=migrate, args=(d,)) for d in databases]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for database in databases:
        database.close()
    assert len(found) == len(databases)  # none raised
    assert [v for v, _ in versions(database_url)] == [v for v, _ in VERSIONS]
    assert dex_tables(database_url) == declared_tables()


def test_engines_opening_a_fresh_sqlite_file_together_all_connect(tmp_path):
    """While one connection switches a new file to WAL, SQLite refuses the others at once
    ("database is locked", no busy wait); each new connection tries again instead of failing
    its process's start. Eight engines race on a fresh file, forty times over (a few races in
    a hundred hit the window)."""
    failures: list[BaseException] = []
    for attempt in range(40):
        url = f"sqlite:///{tmp_path}/race-{attempt}.sqlite"
        engines = [create_engine(url) for _ in range(8)]
        start = threading.Barrier(len(engines))

        def connect(engine: sa.Engine, start: threading.Barrier = start) -> None:
            start.wait()
            try:
                with engine.connect() as conn:
                    assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            except BaseException as error:  # collected for the assertion
                failures.append(error)

        threads = [threading.Thread(target=connect, args=(e,)) for e in engines]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for engine in engines:
            engine.dispose()
    assert failures == []


async def test_two_workers_starting_at_once_on_a_fresh_database_migrate_it_once(
    make_worker, model, client, database_url
):
    first = make_worker(DEX_AGENTS_WORKER_ID="first")
    second = make_worker(DEX_AGENTS_WORKER_ID="second")
    await asyncio.gather(asyncio.to_thread(first.start), asyncio.to_thread(second.start))
    model.enqueue(reply_text("Hello."))
    session = await client.start_session("Assistant", "Hi.")
    snapshot = await client.wait_for(session, turns_done(1))
    first.stop()
    second.stop()

    assert [v for v, _ in versions(database_url)] == [v for v, _ in VERSIONS]
    assert snapshot.messages[-1].text == "Hello."
    assert "Traceback" not in first.log() + second.log()


async def test_a_database_newer_than_the_code_is_refused_and_left_unchanged(
    make_worker, database_url
):
    database = Database(database_url)
    database.create_schema()
    database.write_sync(
        lambda conn: conn.execute(
            schema.version_table.insert().values(
                version=schema.LATEST_VERSION + 1, description="from the future", applied_at="-"
            )
        )
    )
    database.close()
    before = (table_names(database_url), versions(database_url))

    with pytest.raises(RuntimeError) as refused:
        make_worker().start()
    client = AgentClient(database_url)
    try:
        with pytest.raises(SchemaTooNewError) as client_refused:
            await client.list_sessions()
    finally:
        await client.close()

    for message in (str(refused.value), str(client_refused.value)):
        assert f"schema version {schema.LATEST_VERSION + 1}" in message
        assert "upgrade dex-agents" in message
    # The Worker says so in one line, without a traceback.
    assert "error: the database at " in str(refused.value)
    assert "Traceback" not in str(refused.value)
    # Nothing was written: no DBOS tables, no Worker row, the same versions.
    assert (table_names(database_url), versions(database_url)) == before
    assert query(database_url, "SELECT worker_id FROM dex_workers") == []
