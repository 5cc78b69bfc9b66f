"""A Worker that is gone for good: a live Worker on the same database takes its sessions over,
at once when it stopped cleanly or its process is gone from this host, after its lease when
it was on another host; and only when it hosts every flow type of the gone Worker."""

from __future__ import annotations

import asyncio
import socket
import subprocess

import pytest

from dex_agents import db, texts
from dex_agents.clock import now_text
from dex_agents.db import Database
from dex_agents.liveness import WorkerLease
from dex_agents.testing import reply_text, reply_tools
from dex_agents.types import WorkerInfo
from dex_agents.waker import Waker

from .helpers import OUTCOME_UNKNOWN_TURN, tool_messages, turns_done, wait_until

SHORT_LEASE = {"DEX_AGENTS_WORKER_LEASE_SECONDS": "2"}
# Longer than any wait below: a takeover that waited for this lease would time the test out.
LONG_LEASE = {"DEX_AGENTS_WORKER_LEASE_SECONDS": "600"}


@pytest.mark.parametrize("how", ["killed", "stopped"])
async def test_a_live_worker_takes_over_a_waiting_session_at_once(make_worker, model, client, how):
    # A Worker of this host whose process is gone (killed), or that stopped cleanly, is taken
    # over at once, though its lease here is longer than the test may take; and its Steps are
    # taken at once, not at the queue's next poll (once a minute here).
    lease = {**LONG_LEASE, "DEX_AGENTS_QUEUE_POLL_SECONDS": "60"}
    model.enqueue(reply_text("first answer"), reply_text("second answer"))
    worker_a = make_worker(DEX_AGENTS_WORKER_ID="worker-a", **lease).start()
    session = await client.start_session("Assistant", "first question")
    await client.wait_for(session, turns_done(1))
    make_worker(DEX_AGENTS_WORKER_ID="worker-b", **lease).start()
    if how == "killed":
        worker_a.kill()
    else:
        worker_a.stop()

    await client.send_user_message(session, "second question")
    snapshot = await client.wait_for(session, turns_done(2))

    assert snapshot.messages[-1].text == "second answer"
    assert len(model.requests) == 2  # each model call ran once
    history = await client.get_step_history(session)
    assert [s.step_type for s in history] == [
        "StartAgentSession",
        "RunModel",
        "AwaitUserMessage",
        "RunModel",
        "AwaitUserMessage",
    ]
    assert [s.status for s in history[:-1]] == ["succeeded"] * 4
    # The gone Worker's row is taken over and deleted. A Worker that stopped cleanly parked
    # its waiting Step, whose wake any live Worker claims: the turn may end before that.
    for _ in range(100):
        workers = await client.list_workers()
        if [w.worker_id for w in workers] == ["worker-b"]:
            break
        await asyncio.sleep(0.05)
    assert [(w.worker_id, w.state) for w in workers] == [("worker-b", "running")]


async def test_a_killed_workers_single_attempt_write_is_not_run_again_by_the_taker(
    make_worker, model, client, tool_log
):
    model.enqueue(
        reply_tools(("w1", "slow_write", {"seconds": 30})),
        reply_text("The write may or may not have happened."),
    )
    worker_a = make_worker(DEX_AGENTS_WORKER_ID="worker-a", **LONG_LEASE).start()
    session = await client.start_session("Assistant", "Write it.")
    wait_until(lambda: tool_log.count("slow_write") == 1, what="the write to start")
    make_worker(DEX_AGENTS_WORKER_ID="worker-b", **LONG_LEASE).start()
    worker_a.kill()

    await client.wait_for(session, turns_done(1))

    assert [e["phase"] for e in tool_log.entries("slow_write")] == ["started"]
    assert tool_messages(model, 1) == {"w1": texts.OUTCOME_UNKNOWN_TEXT}
    history = await client.get_step_history(session)
    assert [s.step_type for s in history] == OUTCOME_UNKNOWN_TURN
    assert (history[2].status, history[2].attempts) == ("failed", 1)


async def test_a_worker_that_comes_back_keeps_its_row_and_beats(make_worker, model, client):
    model.enqueue(reply_text("answer"))
    worker = make_worker(DEX_AGENTS_WORKER_ID="worker-a", **SHORT_LEASE).start()
    session = await client.start_session("Assistant", "question")
    await client.wait_for(session, turns_done(1))
    (first,) = await client.list_workers()
    worker.restart()

    (again,) = await client.list_workers()
    assert (again.worker_id, again.state) == ("worker-a", "running")
    assert again.beats > first.beats
    assert again.pid != first.pid


def _add_worker_row(database_url: str, worker_id: str, **values: object) -> None:
    row = {
        "worker_id": worker_id,
        "beats": 1,
        "state": "running",
        "flow_types": "Assistant",
        "lease_seconds": 600.0,
        "host": socket.gethostname(),
        "pid": 1,
        "started_at": now_text(),
        "heartbeat_at": now_text(),
        **values,
    }
    database = Database(database_url)
    try:
        database.write_sync(lambda conn: conn.execute(db.workers.insert().values(**row)))
    finally:
        database.close()


async def test_a_gone_pid_is_taken_over_at_once_another_host_after_a_lease_other_flows_never(
    make_worker, database_url, client
):
    watcher = make_worker(DEX_AGENTS_WORKER_ID="watcher", **SHORT_LEASE).start()
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid of this host that no process has any more
    _add_worker_row(database_url, "gone-here", pid=gone.pid)
    _add_worker_row(database_url, "elsewhere", host="another-host")
    _add_worker_row(
        database_url, "other-flows", host="another-host", flow_types="Assistant,Planner"
    )

    async def ids() -> set[str]:
        return {w.worker_id for w in await client.list_workers()}

    while "gone-here" in await ids():
        await asyncio.sleep(0.02)
    # The same look that took "gone-here" over began watching "elsewhere" for a lease.
    assert await ids() == {"watcher", "elsewhere", "other-flows"}
    while "elsewhere" in await ids():
        await asyncio.sleep(0.05)
    await asyncio.sleep(1.5)  # a few more looks
    # DBOS recovery would hand the watcher Steps of a flow type it does not host: a Worker
    # that hosts them all takes that one over.
    assert await ids() == {"watcher", "other-flows"}
    assert "Worker gone-here is gone; Worker watcher took over" in watcher.log()


def _never_recover(workflow_ids: list[str]) -> int:
    raise AssertionError("nothing is recovered here")


def test_a_gone_process_of_this_host_makes_one_look_not_one_a_tick(tmp_path):
    # A gone Worker this one may not take over (it does not host all of its flow types) keeps
    # its running row: the tick that finds its process gone looks at the rows, the next ones
    # do not (each look reads every row), until another row's process is found gone.
    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid of this host that no process has any more
    database = Database(f"sqlite:///{tmp_path / 'dex.sqlite'}")
    lease = WorkerLease(
        database,
        "watcher",
        ["Assistant"],
        _never_recover,
        lease_seconds=600.0,
        waker=Waker(database, 1.0),
    )
    row = {
        "state": "running",
        "beats": 1,
        "flow_types": ["Assistant", "Planner"],
        "lease_seconds": 600.0,
        "host": socket.gethostname(),
        "pid": gone.pid,
        "started_at": now_text(),
        "heartbeat_at": now_text(),
    }
    lease.workers = [WorkerInfo(worker_id="other-flows", **row)]
    try:
        assert [lease._host_process_ended() for _ in range(3)] == [True, False, False]
        lease.workers.append(WorkerInfo(worker_id="other-flows-2", **row))
        assert [lease._host_process_ended() for _ in range(2)] == [True, False]
        lease.workers = []
        assert lease._host_process_ended() is False
    finally:
        database.close()
