"""A Worker's ID, its start after a crash and its clean stop: one live Worker per ID, an ID of
its own per process by default, interrupted Steps resumed promptly, a quiet clean stop; and its
runners' warm-up before it reports ready."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest

from dex_agents import db
from dex_agents.clock import now_text
from dex_agents.db import Database
from dex_agents.testing import reply_text

from .helpers import turns_done


def _output_after_header(log: str) -> str:
    """A WorkerProcess log without its `--- start` header line."""
    return log.split("\n", 1)[1]


async def test_a_live_workers_id_is_refused_and_a_killed_ones_is_reused_at_once(
    make_worker, client
):
    first = make_worker(DEX_AGENTS_WORKER_ID="worker-a").start()
    assert first.process is not None
    second = make_worker(DEX_AGENTS_WORKER_ID="worker-a")

    with pytest.raises(RuntimeError):
        second.start()

    assert second.process is not None and second.process.returncode == 1
    refusal = _output_after_header(second.log())
    assert refusal.count("\n") == 1, refusal
    assert refusal.startswith(
        f"error: Worker ID 'worker-a' is in use by a live Worker (pid {first.process.pid} on "
    )
    (row,) = await client.list_workers()
    assert (row.worker_id, row.state, row.pid) == ("worker-a", "running", first.process.pid)

    first.kill()
    began = time.monotonic()
    first.start()  # the killed Worker's pid is gone: no lease to wait for
    assert time.monotonic() - began < 10  # the lease is 15 s
    (row,) = await client.list_workers()
    assert (row.worker_id, row.state, row.pid) == ("worker-a", "running", first.process.pid)
    first.stop()


async def test_an_id_last_used_on_another_host_is_taken_after_its_lease_of_silence(
    make_worker, database_url, client
):
    row = {
        "worker_id": "worker-x",
        "beats": 7,
        "state": "running",
        "flow_types": "Assistant",
        "lease_seconds": 1.0,
        "host": "another-host",
        "pid": 1,
        "started_at": now_text(),
        "heartbeat_at": now_text(),
    }
    database = Database(database_url)
    database.create_schema()
    database.write_sync(lambda conn: conn.execute(db.workers.insert().values(**row)))
    database.close()

    worker = make_worker(DEX_AGENTS_WORKER_ID="worker-x").start()

    assert "Worker ID worker-x was last used on host another-host; waiting up to 1 s" in (
        worker.log()
    )
    (taken,) = await client.list_workers()
    assert (taken.worker_id, taken.host, taken.pid) == (
        "worker-x",
        socket.gethostname(),
        worker.process.pid,
    )
    worker.stop()


async def test_workers_without_an_id_get_one_each_and_a_clean_stop_logs_no_error(
    make_worker, database_url, model, client
):
    workers = [make_worker(DEX_AGENTS_WORKER_ID="").start() for _ in range(2)]
    # Idle, but with Steps that wait: sessions waiting for their next message.
    model.enqueue(reply_text("one"), reply_text("two"))
    sessions = [await client.start_session("Assistant", f"question {n}") for n in range(2)]
    for session in sessions:
        await client.wait_for(session, turns_done(1))
    listed = subprocess.run(
        [sys.executable, "-m", "dex_agents", "workers", "--json", "--database-url", database_url],
        capture_output=True,
        check=True,
        text=True,
    )
    rows = json.loads(listed.stdout)

    assert len({row["worker_id"] for row in rows}) == 2
    assert sorted(row["pid"] for row in rows) == sorted(w.process.pid for w in workers)
    assert {row["state"] for row in rows} == {"running"}
    for worker in workers:
        worker.stop()
        assert worker.process.returncode == 0
        output = worker.log()
        assert "Traceback" not in output and " ERROR " not in output, output


async def test_runners_warm_up_before_the_worker_is_ready_and_a_failed_one_is_logged(
    make_worker, model, client, tmp_path
):
    marker = tmp_path / "warm"
    worker = make_worker("tests.apps.warm_up:flows", WARM_UP_FILE=str(marker)).start()
    assert marker.read_text() == "warm"  # written before the ready file
    log = worker.log()
    ready = log.index(" hosts Marked, Failing")
    assert -1 < log.find("MarkingRunner warmed up in") < ready, log
    assert (
        -1
        < log.find(
            "FailingRunner could not warm up (RuntimeError: no tokenizer for scripted-model)"
        )
        < ready
    ), log

    # A failed warm-up does not stop the Worker: its flow's turns run.
    model.enqueue(reply_text("Hi."))
    result = await client.start_session_and_wait("Failing", "Hello?", timeout=60)
    assert (result.status, result.text) == ("completed", "Hi.")
    worker.stop()
