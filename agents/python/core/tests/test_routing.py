"""Each flow type's Steps reach only the Workers that host it: a session of a flow type no
running Worker hosts waits, intact, until one starts."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import warnings
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from dex_agents import FlowTypeNotHostedWarning, db, dbos_internals
from dex_agents.routing import step_queue_name
from dex_agents.testing import ScriptedReply, reply_text, reply_tools

from .helpers import no_failed_workflows, step_workflows, turns_done, wait_until

LONG_LEASE = {"DEX_AGENTS_WORKER_LEASE_SECONDS": "600"}


async def test_a_flow_type_no_worker_hosts_waits_intact_and_runs_once_a_worker_hosts_it(
    database_url, make_worker, model, client
):
    model.enqueue(ScriptedReply(text="Hello from Assistant."))
    with make_worker():  # hosts Assistant only
        with pytest.warns(FlowTypeNotHostedWarning, match="'Weather'.*Assistant"):
            waiting = await client.start_session("Weather", "Rain tomorrow?")
        # The Assistant Worker keeps serving its own flow type meanwhile.
        served = await client.start_session("Assistant", "Hi")
        await client.wait_for(served, turns_done(1), timeout=30)
        await asyncio.sleep(1.0)  # several queue polls of the Assistant Worker

        history = await client.get_step_history(waiting)
        assert [(s.step_type, s.status) for s in history] == [("StartAgentSession", "scheduled")]
        assert set(step_workflows(database_url, waiting).values()) == {"ENQUEUED"}
        assert len(model.requests) == 1

        model.enqueue(ScriptedReply(text="No rain."))
        with make_worker("tests.apps.basic:weather_flows"):
            snapshot = await client.wait_for(waiting, turns_done(1), timeout=30)
            with warnings.catch_warnings():
                warnings.simplefilter("error", FlowTypeNotHostedWarning)
                await client.start_session("Weather")  # hosted now: no warning

    assert [m.text for m in snapshot.messages] == ["Rain tomorrow?", "No rain."]
    assert no_failed_workflows(database_url, waiting)
    assert model.requests[1].body["messages"][0]["content"] == "You are a weather assistant."


def test_cli_start_warns_when_no_live_worker_hosts_the_flow_type(database_url):
    result = subprocess.run(
        [sys.executable, "-m", "dex_agents", "start", "Wether", "hello"],
        env={"DEX_AGENTS_DATABASE_URL": database_url, "PATH": ""},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().startswith("session-")
    assert result.stderr.strip() == (
        "warning: no live Worker hosts flow type 'Wether' (no Worker is live); "
        "the session waits until a Worker that hosts 'Wether' starts"
    )


async def test_a_tool_step_started_without_its_queue_is_taken_over_on_its_flow_types_queue(
    database_url, make_worker, model, client, tool_log
):
    # A tool Step starts at once as a workflow of its own, then gets its flow type's queue
    # stamped on it. A Worker killed between the two leaves it unqueued; DBOS recovery would
    # hand such a workflow to its internal queue, which every Worker reads, Workers without
    # the flow type included. The taker stamps it first. (Two calls: a lone tool call runs
    # inline in its model Step's workflow, with no workflow of its own.)
    model.enqueue(
        reply_tools(("r1", "slow_read", {"seconds": 4}), ("r2", "slow_read", {"seconds": 4})),
        reply_text("It is done."),
    )
    worker_a = make_worker(DEX_AGENTS_WORKER_ID="worker-a", **LONG_LEASE).start()
    session = await client.start_session("Assistant", "Read it.")

    # The reads may start before their workflows' stamp commits: wait for both.
    def started_and_stamped() -> bool:
        stamped = _queued_tool_steps(database_url, session)
        return tool_log.count("slow_read") == 2 and len(stamped) == 2

    wait_until(started_and_stamped, what="the reads to start and their workflows to be stamped")
    worker_a.kill()
    tool_steps = _unstamp_tool_steps(database_url, session)
    assert len(tool_steps) == 2

    with make_worker("tests.apps.basic:weather_flows", DEX_AGENTS_WORKER_ID="weather"):
        make_worker(DEX_AGENTS_WORKER_ID="worker-b", **LONG_LEASE).start()
        snapshot = await client.wait_for(session, turns_done(1), timeout=60)

    assert snapshot.messages[-1].text == "It is done."
    phases = [e["phase"] for e in tool_log.entries("slow_read")]
    assert sorted(phases) == ["finished"] * 2 + ["started"] * 4
    for tool_step in tool_steps:
        workflow = _workflow_row(database_url, tool_step)
        assert workflow == ("SUCCESS", step_queue_name("Assistant"), "worker-b")
    assert no_failed_workflows(database_url, session)


async def test_a_replayed_workflow_stops_where_an_earlier_release_handed_its_chain_over(
    database_url, make_worker, model, client
):
    # A release whose workflows ran fewer Steps inline ended each chain by starting the next
    # Step as a workflow of its own. A Worker killed after that start, before the workflow's
    # end was recorded, leaves it pending; its replay, by a release with a longer chain, must
    # stop there, not drive the Steps that the handed-over workflow drives too.
    model.enqueue(*(reply_text(f"answer {n}") for n in range(1, 5)))
    worker_a = make_worker("tests.apps.short_chain:flows", DEX_AGENTS_WORKER_ID="worker-a")
    worker_a.start()
    session = await client.start_session("Assistant", "question 1")
    for turn in (2, 3):
        await client.wait_for(session, turns_done(turn - 1))
        await client.send_user_message(session, f"question {turn}")
    await client.wait_for(session, turns_done(3))
    # Workflows: StartAgentSession-1 hands over after AwaitUserMessage-3 (a Step after which
    # a session may move, which a replay already tells apart); RunModel-4 after RunModel-6.
    second = f"{session}/RunModel-4"
    wait_until(
        lambda: step_workflows(database_url, session).get(second) == "SUCCESS",
        what="the second workflow to hand over",
    )
    worker_a.kill()
    assert len(step_workflows(database_url, session)) == 3
    with _dbos_workflows(database_url) as (conn, table):
        conn.execute(table.update().where(table.c.workflow_uuid == second).values(status="PENDING"))

    make_worker(DEX_AGENTS_WORKER_ID="worker-b", **LONG_LEASE).start()
    wait_until(
        lambda: step_workflows(database_url, session)[second] == "SUCCESS",
        what="the replayed workflow to end at its hand-over",
    )
    await client.send_user_message(session, "question 4")
    snapshot = await client.wait_for(session, turns_done(4))

    assert snapshot.messages[-1].text == "answer 4"
    assert len(model.requests) == 4  # each model call ran once
    history = await client.get_step_history(session)
    assert [s.attempts for s in history if s.step_type == "RunModel"] == [1] * 4
    assert no_failed_workflows(database_url, session)


@contextlib.contextmanager
def _dbos_workflows(database_url: str) -> Iterator[tuple[sa.Connection, sa.TableClause]]:
    """A transaction on the database, and DBOS's workflow table as dex-agents sees it."""
    engine = db.create_engine(database_url)
    try:
        with engine.begin() as conn:
            yield conn, dbos_internals.workflow_status(conn)
    finally:
        engine.dispose()


def _queued_tool_steps(database_url: str, session_id: str) -> list[str]:
    """The session's running tool Step workflows that have their queue stamped."""
    with _dbos_workflows(database_url) as (conn, workflows):
        return _queued(conn, workflows, session_id)


def _queued(conn: sa.Connection, workflows: sa.TableClause, session_id: str) -> list[str]:
    rows = conn.execute(
        sa.select(workflows.c.workflow_uuid).where(
            workflows.c.workflow_uuid.like(f"{session_id}/CallTool-%"),
            workflows.c.status == "PENDING",
            workflows.c.queue_name.is_not(None),
        )
    )
    return [str(workflow_id) for workflow_id in rows.scalars()]


def _unstamp_tool_steps(database_url: str, session_id: str) -> list[str]:
    """Leaves the session's running tool Step workflows as a kill before their stamp would."""
    with _dbos_workflows(database_url) as (conn, workflows):
        workflow_ids = _queued(conn, workflows, session_id)
        conn.execute(
            workflows.update()
            .where(workflows.c.workflow_uuid.in_(workflow_ids))
            .values(queue_name=None)
        )
    return workflow_ids


def _workflow_row(database_url: str, workflow_id: str) -> tuple[str, str, str]:
    with _dbos_workflows(database_url) as (conn, workflows):
        row = conn.execute(
            sa.select(workflows.c.status, workflows.c.queue_name, workflows.c.executor_id).where(
                workflows.c.workflow_uuid == workflow_id
            )
        ).one()
    return (row[0], row[1], row[2])
