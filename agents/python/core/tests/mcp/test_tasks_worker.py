"""MCP tasks through a real Worker running a Stepwise agent, against the test server over
Streamable HTTP (its own process, which counts task creations, reads, updates and
cancellations outside the database): a task polled by PollToolTask across a SIGKILL,
cancel_turn, a steer, and a question the task asks."""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dex_agents import store
from dex_agents.db import create_engine
from dex_agents.testing import reply_text, reply_tools
from dex_agents.testing.sessions import (
    events_of,
    pending_interrupt,
    step_types,
    turns_done,
    wait_until,
)
from dex_agents.testing.shared_worker import SessionRun, SharedWorkerSuite

from .servers import HttpServerProcess, RunLog, free_port, mcp_worker_app, served

RUNS = RunLog(Path(tempfile.mkdtemp(prefix="mcp-tasks-")) / "runs.jsonl")
PORT = free_port()


def waiting_for_task(snapshot: Any) -> bool:
    return any(call.status == "waiting_for_task" for call in snapshot.tool_calls)


def created(session: str) -> list[dict[str, Any]]:
    return [run for run in RUNS.runs("task_created") if run["key"].startswith(f"{session}/")]


async def call_checkpoint(run: SessionRun, database_url: str, session: str) -> str:
    """The CallTool attempt's heartbeat checkpoint, once the tool Step saved one."""
    history = await run.client.get_step_history(session)
    step = next(s.step_execution_id for s in history if s.step_type == "CallTool")
    engine = create_engine(database_url)
    try:
        for _ in range(500):
            with engine.connect() as conn:
                row = store.load_step(conn, session, step)
            if row is not None and row.checkpoint:
                return row.checkpoint
            time.sleep(0.01)
    finally:
        engine.dispose()
    raise AssertionError("the CallTool attempt saved no checkpoint")


def of_task(kind: str, task_id: str) -> list[dict[str, Any]]:
    return [run for run in RUNS.runs(kind) if run["id"] == task_id]


class TestMcpTasks(SharedWorkerSuite):
    app = mcp_worker_app(RUNS, PORT)

    @pytest.fixture(scope="class", autouse=True)
    @classmethod
    def task_server(cls) -> Iterator[HttpServerProcess]:
        yield from served(RUNS, PORT)

    async def test_a_sigkill_after_tools_call_creates_no_second_task(
        self, run: SessionRun, shared_database: str
    ) -> None:
        run.model.enqueue(
            reply_tools(("t1", "remote__report", {"topic": "sales", "seconds": 3})),
            reply_text("The report is ready."),
        )
        session = await run.client.start_session("Mcp", "Write the sales report.")
        wait_until(lambda: len(created(session)) == 1, what="the task to be created")
        # The kill lands once the handle is the CallTool attempt's checkpoint, before or
        # after the Step's commit; either way the task is polled, never created again.
        saved = await call_checkpoint(run, shared_database, session)
        assert json.loads(saved)["task_id"] == created(session)[0]["id"]
        run.kill_and_restart()
        await run.client.wait_for(session, turns_done(1), timeout=60)

        [task] = created(session)
        assert task["key"] == f"{session}/turn-1/t1"
        assert run.tool_outputs(1) == {"t1": "report on sales is ready"}
        assert of_task("task_get", task["id"])[-1]["status"] == "completed"
        started = await events_of(run.client, session, "tool_task_started")
        assert started == [
            {"tool_call_id": "t1", "tool_name": "remote__report", "task_id": task["id"]}
        ]
        statuses = [e["status"] for e in await events_of(run.client, session, "mcp.task_status")]
        assert statuses[-1] == "completed"
        finished = await events_of(run.client, session, "tool_call_finished")
        assert [f["status"] for f in finished] == ["succeeded"]
        steps = await step_types(run.client, session)
        assert steps.count("CallTool") == 1 and "PollToolTask" in steps

    async def test_cancel_turn_sends_tasks_cancel_and_records_outcome_unknown(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(reply_tools(("t1", "remote__long_job", {})), reply_text("Stopped."))
        session = await run.client.start_session("Mcp", "Run the long job.")
        await run.client.wait_for(session, waiting_for_task)
        [task] = created(session)
        wait_until(lambda: len(of_task("task_get", task["id"])) >= 1, what="a poll")
        assert await run.client.cancel_turn(session)
        await run.client.wait_for(session, turns_done(1))

        assert [c["name"] for c in of_task("task_cancelled", task["id"])] == ["long_job"]
        finished = await events_of(run.client, session, "tool_call_finished")
        assert finished == [
            {"tool_call_id": "t1", "tool_name": "remote__long_job", "status": "outcome_unknown"}
        ]
        steps = await step_types(run.client, session)
        assert "CancelToolTask" in steps and "FinishTurnCancellation" in steps

    async def test_a_steer_never_abandons_a_started_task(self, run: SessionRun) -> None:
        run.model.enqueue(
            reply_tools(("t1", "remote__report", {"topic": "costs", "seconds": 4})),
            reply_text("Costs are in."),
        )
        session = await run.client.start_session("Mcp", "Report on costs.")
        await run.client.wait_for(session, waiting_for_task)
        [task] = created(session)
        assert await run.client.steer_user_message(session, text="Include travel too.")
        polls = len(of_task("task_get", task["id"]))
        wait_until(lambda: len(of_task("task_get", task["id"])) > polls, what="another poll")
        await run.client.wait_for(session, turns_done(2), timeout=60)

        assert of_task("task_cancelled", task["id"]) == []
        assert run.tool_outputs(1) == {"t1": "report on costs is ready"}
        finished = await events_of(run.client, session, "tool_call_finished")
        assert [f["status"] for f in finished] == ["succeeded"]
        assert len(created(session)) == 1

    async def test_a_task_question_round_trip(self, run: SessionRun) -> None:
        run.model.enqueue(
            reply_tools(("t1", "remote__ship", {"item": "lamp"})), reply_text("Shipped.")
        )
        session = await run.client.start_session("Mcp", "Ship the lamp.")
        snapshot = await run.client.wait_for(session, pending_interrupt("t1-input-1"))
        [question] = snapshot.pending_interrupts
        assert question.question == "Ship lamp by express?"
        assert list(question.choices) == ["yes", "no"]
        assert await run.client.answer_question(session, "t1-input-1", "yes")
        await run.client.wait_for(session, turns_done(1))

        [task] = created(session)
        [update] = of_task("task_updated", task["id"])
        assert update["responses"] == {
            "express": {"action": "accept", "content": {"express": "yes"}}
        }
        assert run.tool_outputs(1) == {"t1": "shipped lamp express=yes"}
        history = await run.client.get_step_history(session)
        assert [s.step_type for s in history if s.step_type == "AwaitQuestionAnswer"]
        assert all(s.status == "succeeded" for s in history if s.step_type == "PollToolTask")

    async def test_a_server_outage_longer_than_the_poll_attempts_loses_nothing(
        self, run: SessionRun, task_server: HttpServerProcess
    ) -> None:
        run.model.enqueue(
            reply_tools(("r1", "remote__report", {"topic": "audit", "seconds": 3})),
            reply_text("The report is ready."),
        )
        session = await run.client.start_session("Mcp", "Write the audit report.")
        await run.client.wait_for(session, waiting_for_task)

        async def polls() -> int:
            return (await step_types(run.client, session)).count("PollToolTask")

        before = await polls()
        task_server.set_unavailable(True)
        try:
            # Each poll that finds the server away schedules the next (a poll's three attempts
            # would have given up within about 1.5 s, and the call gone to its failure route).
            deadline = time.monotonic() + 30
            while await polls() < before + 2:
                assert time.monotonic() < deadline, "no poll was scheduled during the outage"
                await asyncio.sleep(0.1)
        finally:
            task_server.set_unavailable(False)
        await run.client.wait_for(session, turns_done(1), timeout=60)

        finished = await events_of(run.client, session, "tool_call_finished")
        assert [(f["tool_call_id"], f["status"]) for f in finished] == [("r1", "succeeded")]
        assert run.tool_outputs(1) == {"r1": "report on audit is ready"}
        assert len(created(session)) == 1
        history = await run.client.get_step_history(session)
        assert all(s.status == "succeeded" for s in history if s.step_type == "PollToolTask")
        assert "RecordToolFailure" not in [s.step_type for s in history]

    async def test_a_task_the_server_forgot_goes_to_the_failure_route_by_effect(
        self, run: SessionRun, task_server: HttpServerProcess
    ) -> None:
        run.model.enqueue(
            reply_tools(
                ("r1", "remote__report", {"topic": "audit", "seconds": 600}),
                ("w1", "remote__long_job", {}),
            ),
            reply_text("Both were lost."),
        )
        session = await run.client.start_session("Mcp", "Audit, and run the job.")
        await run.client.wait_for(
            session, lambda s: sum(c.status == "waiting_for_task" for c in s.tool_calls) == 2
        )
        task_server.forget_tasks()  # as a restarted server, which keeps none of them
        await run.client.wait_for(session, turns_done(1), timeout=60)

        finished = await events_of(run.client, session, "tool_call_finished")
        assert {f["tool_call_id"]: f["status"] for f in finished} == {
            "r1": "failed",
            "w1": "outcome_unknown",
        }
        assert "does not know task" in run.tool_outputs(1)["r1"]
        assert len(created(session)) == 2
        # An unknown task is not tried again: the poll fails at once, then RecordToolFailure
        # records failed for the read and outcome_unknown for the idempotent write.
        history = await run.client.get_step_history(session)
        failed = [s for s in history if s.step_type == "PollToolTask" and s.status == "failed"]
        assert len(failed) == 2
        assert all("does not know task" in (s.error or "") for s in failed)
        assert [s.step_type for s in history].count("RecordToolFailure") == 2
