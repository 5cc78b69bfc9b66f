"""Several Workers on one database, and how a Worker stops: every session completes, each
model call runs once, and a clean stop lets running calls finish."""

from __future__ import annotations

import asyncio
import os
import signal
import time

from dex_agents import texts
from dex_agents.testing import reply_text, reply_tools

from .helpers import tool_messages, turns_done, wait_until


async def test_two_workers_share_one_database(make_worker, model, client):
    model.enqueue(*(reply_text(f"answer {n}") for n in range(8)))
    with make_worker(DEX_AGENTS_WORKER_ID="worker-a"), make_worker(DEX_AGENTS_WORKER_ID="worker-b"):
        sessions = [await client.start_session("Assistant", f"question {n}") for n in range(8)]
        snapshots = await asyncio.gather(*(client.wait_for(s, turns_done(1)) for s in sessions))

    assert len(model.requests) == 8  # every model call ran exactly once
    answers = sorted(s.messages[-1].text or "" for s in snapshots)
    assert answers == sorted(f"answer {n}" for n in range(8))
    for session in sessions:
        history = [step.step_type for step in await client.get_step_history(session)]
        assert history == ["StartAgentSession", "RunModel", "AwaitUserMessage"]


async def test_workers_take_a_new_session_when_its_commit_wakes_them_not_at_their_queue_poll(
    make_worker, model, client
):
    # DBOS's queue poll, once a minute here, would make each start wait up to a minute.
    model.enqueue(*(reply_text(f"answer {n}") for n in range(4)))
    slow_poll = {"DEX_AGENTS_QUEUE_POLL_SECONDS": "60"}
    with make_worker(**slow_poll), make_worker(**slow_poll):
        results = [
            await client.start_session_and_wait("Assistant", f"question {n}", timeout=20)
            for n in range(4)
        ]

    assert sorted(r.text or "" for r in results) == [f"answer {n}" for n in range(4)]
    assert len(model.requests) == 4  # each session taken by one Worker only


async def test_a_clean_stop_lets_a_running_write_finish_and_commit(
    make_worker, model, client, tool_log
):
    model.enqueue(reply_tools(("w1", "slow_write", {"seconds": 2})), reply_text("Written."))
    worker = make_worker().start()
    session = await client.start_session("Assistant", "Write it.")
    wait_until(lambda: tool_log.count("slow_write") == 1, what="the write to start")
    worker.stop()  # SIGTERM, then waits for the process to exit

    assert [e["phase"] for e in tool_log.entries("slow_write")] == ["started", "finished"]
    history = await client.get_step_history(session)
    write = next(s for s in history if s.step_type == "CallSingleAttemptTool")
    assert (write.status, write.attempts) == ("succeeded", 1)
    # No attempt began after the write: ResumeTurn may or may not have committed before the
    # stop, but the next model call waits for the Worker that comes back.
    after = history[history.index(write) + 1 :]
    assert [s.attempts for s in after if s.step_type == "RunModel"] in ([], [0])

    worker.start()
    snapshot = await client.wait_for(session, turns_done(1))
    worker.stop()
    assert tool_messages(model, 1) == {"w1": "written"}
    assert snapshot.messages[-1].text == "Written."
    assert len(tool_log.entries("slow_write")) == 2  # one run: started and finished


async def test_a_second_stop_signal_stops_at_once(make_worker, model, client, tool_log):
    model.enqueue(reply_tools(("w1", "slow_write", {"seconds": 60})), reply_text("Unknown."))
    worker = make_worker().start()
    session = await client.start_session("Assistant", "Write it.")
    wait_until(lambda: tool_log.count("slow_write") == 1, what="the write to start")
    assert worker.process is not None
    os.killpg(worker.process.pid, signal.SIGTERM)
    time.sleep(1.0)  # the first signal starts a drain of up to 20 s
    os.killpg(worker.process.pid, signal.SIGTERM)
    worker.process.wait(timeout=8)

    worker.start()
    await client.wait_for(session, turns_done(1))
    worker.stop()
    assert [e["phase"] for e in tool_log.entries("slow_write")] == ["started"]
    assert tool_messages(model, 1) == {"w1": texts.OUTCOME_UNKNOWN_TEXT}
