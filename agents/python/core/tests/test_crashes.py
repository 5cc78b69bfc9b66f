"""Spec matrix 5, 6 and 9, and SIGKILL inside each kind of Step: a crash repeats at most the
one call that was running, and a single-attempt write never runs twice. The tests share one
Worker per backend, which each kills and starts again."""

from __future__ import annotations

import time
from pathlib import Path

from dex_agents import texts
from dex_agents.clock import parse_time
from dex_agents.testing import ScriptedReply, reply_text, reply_tools
from dex_agents.testing.shared_worker import SessionRun, SharedWorkerSuite, WorkerApp

from .helpers import (
    OUTCOME_UNKNOWN_TURN,
    events_of,
    step_types,
    turns_done,
    wait_until,
)


class TestCrashes(SharedWorkerSuite):
    app = WorkerApp(worker_target="tests.apps.basic:flows", worker_cwd=Path(__file__).parent.parent)

    async def test_kill_during_single_attempt_tool_records_outcome_unknown_at_once_on_restart(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(
            reply_tools(("w1", "slow_write", {"seconds": 30})),
            reply_text("The write may or may not have happened."),
        )
        session = await run.client.start_session("Assistant", "Write it.")
        wait_until(lambda: run.tool_log.count("slow_write") == 1, what="the write to start")
        run.worker.kill()
        run.worker.start()
        ready = time.time()
        await run.client.wait_for(session, turns_done(1))

        assert [e["phase"] for e in run.tool_log.entries("slow_write")] == ["started"]
        assert run.tool_outputs(1) == {"w1": texts.OUTCOME_UNKNOWN_TEXT}
        finished = await events_of(run.client, session, "tool_call_finished")
        assert finished == [
            {"tool_call_id": "w1", "tool_name": "slow_write", "status": "outcome_unknown"}
        ]
        history = await run.client.get_step_history(session)
        assert [s.step_type for s in history] == OUTCOME_UNKNOWN_TURN
        tool_step = history[2]
        assert (tool_step.status, tool_step.attempts) == ("failed", 1)
        assert "stopped" in (tool_step.error or "")
        # The restarted Worker (same ID) recovers the Step at launch: it ends at the first Step
        # queue poll after ready (some 0.2 s), not after a lease.
        assert tool_step.ended_at is not None
        assert parse_time(tool_step.ended_at).timestamp() - ready < 2.0

    async def test_kill_during_run_model_reruns_only_that_model_call(self, run: SessionRun) -> None:
        run.model.enqueue(
            reply_tools(("r1", "get_weather", {"city": "Kyiv"})),
            ScriptedReply(text="never delivered", hang=True),
            reply_text("Snow in Kyiv."),
        )
        session = await run.client.start_session("Assistant", "Weather in Kyiv?")
        run.model.wait_for_requests(run.first_request + 2)
        run.worker.kill()
        run.worker.start()
        snapshot = await run.client.wait_for(session, turns_done(1))

        assert run.tool_log.count("get_weather") == 1
        assert len(run.requests) == 3
        # The rerun sends the same input the killed attempt sent.
        assert run.requests[2].body["messages"] == run.requests[1].body["messages"]
        history = await run.client.get_step_history(session)
        assert [s.step_type for s in history] == [
            "StartAgentSession",
            "RunModel",
            "CallTool",
            "ResumeTurn",
            "RunModel",
            "AwaitUserMessage",
        ]
        assert [s.attempts for s in history if s.step_type == "RunModel"] == [1, 2]
        assert snapshot.messages[-1].text == "Snow in Kyiv."
        assert snapshot.usage.model_calls == 2

    async def test_kill_during_call_tool_runs_the_read_again(self, run: SessionRun) -> None:
        run.model.enqueue(reply_tools(("r1", "slow_read", {"seconds": 2})), reply_text("Read it."))
        session = await run.client.start_session("Assistant", "Read slowly.")
        wait_until(lambda: run.tool_log.count("slow_read") == 1, what="the read to start")
        run.worker.kill()
        run.worker.start()
        await run.client.wait_for(session, turns_done(1))

        assert [e["phase"] for e in run.tool_log.entries("slow_read")] == [
            "started",
            "started",
            "finished",
        ]
        assert run.tool_outputs(1) == {"r1": "done"}
        history = await run.client.get_step_history(session)
        call = next(s for s in history if s.step_type == "CallTool")
        assert (call.status, call.attempts) == ("succeeded", 2)

    async def test_idempotent_write_keeps_its_key_across_attempts(self, run: SessionRun) -> None:
        run.model.enqueue(
            reply_tools(("t1", "set_thermostat", {"celsius": 21})), reply_text("Set.")
        )
        session = await run.client.start_session("Assistant", "Set 21 degrees.")
        await run.client.wait_for(session, turns_done(1))
        (entry,) = run.tool_log.entries("set_thermostat")
        assert entry["key"] == f"{session}/turn-1/t1"

    async def test_a_recovered_worker_never_reruns_a_single_attempt_write(
        self, run: SessionRun
    ) -> None:
        """Killed right as the write returns, before or after its commit: either way the write
        ran once and the record is final."""
        run.model.enqueue(reply_tools(("w1", "slow_write", {"seconds": 0.5})), reply_text("Done."))
        session = await run.client.start_session("Assistant", "Write once.")
        wait_until(
            lambda: any(e["phase"] == "finished" for e in run.tool_log.entries("slow_write")),
            what="the write to finish",
        )
        run.worker.kill()
        run.worker.start()
        await run.client.wait_for(session, turns_done(1))
        run.worker.kill()
        run.worker.start()  # a second recovery finds nothing left to run
        assert await run.client.send_user_message(session, "Thanks")
        run.model.enqueue(reply_text("You're welcome."))
        await run.client.wait_for(session, turns_done(2))

        assert [e["phase"] for e in run.tool_log.entries("slow_write")] == ["started", "finished"]
        finished = await events_of(run.client, session, "tool_call_finished")
        assert len(finished) == 1 and finished[0]["status"] in ("succeeded", "outcome_unknown")
        assert (await step_types(run.client, session)).count("CallSingleAttemptTool") == 1
