"""MCP tools through a real Worker process running a Stepwise agent: each call in its own tool
Step with the idempotency key in `_meta`, SIGKILL inside a call, a read re-issued. The tests
share one Worker per backend (a Stepwise Worker's start, with its runner's warm-up, takes many
seconds) and one test server over Streamable HTTP; the kill tests kill and start the Worker."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from dex_agents import texts
from dex_agents.testing import reply_text, reply_tools
from dex_agents.testing.shared_worker import SessionRun, SharedWorkerSuite

from ..helpers import events_of, step_types, turns_done, wait_until
from .servers import HttpServerProcess, RunLog, free_port, mcp_worker_app, served

RUNS = RunLog(Path(tempfile.mkdtemp(prefix="mcp-worker-")) / "runs.jsonl")
PORT = free_port()


class TestMcpWorker(SharedWorkerSuite):
    app = mcp_worker_app(RUNS, PORT)

    @pytest.fixture(scope="class", autouse=True)
    @classmethod
    def http_server(cls) -> Iterator[HttpServerProcess]:
        yield from served(RUNS, PORT)

    @pytest.fixture
    def run_log(self, run: SessionRun) -> RunLog:
        """The servers' run log, emptied for each test (as `run` empties the tool log)."""
        if RUNS.path.exists():
            os.truncate(RUNS.path, 0)
        return RUNS

    async def test_mcp_tools_run_in_tool_steps_with_the_key_in_meta(
        self, run: SessionRun, run_log: RunLog
    ) -> None:
        run.model.enqueue(
            reply_tools(
                ("r1", "local__lookup", {"city": "Lima"}),
                ("i1", "remote__set_value", {"name": "mode", "value": "eco"}),
                ("e1", "local__broken", {}),
            ),
            reply_text("Done."),
        )
        session = await run.client.start_session("Mcp", "Look up Lima and set eco mode.")
        snapshot = await run.client.wait_for(session, turns_done(1))

        offered = {tool["function"]["name"] for tool in run.requests[0].body["tools"]}
        assert {"local__lookup", "remote__lookup", "remote__hang", "local__set_value"} <= offered
        results = run.tool_outputs(1)
        assert results["r1"] == "sunny in Lima"
        assert results["i1"] == "mode=eco"
        assert "the broken tool broke" in results["e1"]
        keys = {entry["tool"]: entry["key"] for entry in run_log.runs()}
        assert keys == {
            "lookup": f"{session}/turn-1/r1",
            "set_value": f"{session}/turn-1/i1",
            "broken": f"{session}/turn-1/e1",
        }
        finished = await events_of(run.client, session, "tool_call_finished")
        assert {f["tool_call_id"]: f["status"] for f in finished} == {
            "r1": "succeeded",
            "i1": "succeeded",
            "e1": "failed",
        }
        # read and idempotent_write (and the read-annotated broken tool) run in CallTool, with
        # no approval asked.
        steps = await step_types(run.client, session)
        assert steps.count("CallTool") == 3
        assert "AwaitToolApproval" not in steps
        assert snapshot.messages[-1].text == "Done."

    async def test_sigkill_inside_a_destructive_call_records_outcome_unknown_once(
        self, run: SessionRun, run_log: RunLog
    ) -> None:
        run.model.enqueue(
            reply_tools(("d1", "remote__hang", {})), reply_text("It may have happened.")
        )
        session = await run.client.start_session("Mcp", "Do the risky thing.")
        # A destructive tool needs approval by default.
        await run.client.wait_for(session, lambda s: bool(s.pending_interrupts))
        assert await run.client.resolve_interrupt(session, "d1", approved=True)
        wait_until(lambda: len(run_log.runs("hang")) == 1, what="the call to start")
        run.worker.kill()
        run.worker.start()
        await run.client.wait_for(session, turns_done(1))

        assert len(run_log.runs("hang")) == 1
        assert run.tool_outputs(1) == {"d1": texts.OUTCOME_UNKNOWN_TEXT}
        finished = await events_of(run.client, session, "tool_call_finished")
        assert [f["status"] for f in finished] == ["outcome_unknown"]

    async def test_an_interrupted_read_is_reissued_with_the_same_key(
        self, run: SessionRun, run_log: RunLog
    ) -> None:
        run.model.enqueue(reply_tools(("r1", "local__slow_read", {})), reply_text("Read it."))
        session = await run.client.start_session("Mcp", "Read slowly.")
        wait_until(lambda: len(run_log.runs("slow_read")) == 1, what="the read to start")
        run.worker.kill()
        run.worker.start()
        await run.client.wait_for(session, turns_done(1))

        runs = run_log.runs("slow_read")
        assert [entry["key"] for entry in runs] == [f"{session}/turn-1/r1"] * 2
        assert run.tool_outputs(1) == {"r1": "read at last"}
        history = await run.client.get_step_history(session)
        call = next(step for step in history if step.step_type == "CallTool")
        assert (call.status, call.attempts) == ("succeeded", 2)

    async def test_a_server_restart_between_listing_and_calling_is_harmless(
        self, run: SessionRun, run_log: RunLog, http_server: HttpServerProcess
    ) -> None:
        run.model.enqueue(
            reply_tools(("d1", "remote__delete_item", {"item": "old-report"})),
            reply_text("Deleted."),
        )
        session = await run.client.start_session("Mcp", "Delete the old report.")
        # Listed for the model call; the unannotated write waits for approval meanwhile.
        await run.client.wait_for(session, lambda s: bool(s.pending_interrupts))
        http_server.stop()
        http_server.start()
        assert await run.client.resolve_interrupt(session, "d1", approved=True)
        await run.client.wait_for(session, turns_done(1))

        assert "remote__delete_item" in {
            t["function"]["name"] for t in run.requests[0].body["tools"]
        }
        assert run.tool_outputs(1) == {"d1": "deleted old-report"}
        assert [run["key"] for run in run_log.runs("delete_item")] == [f"{session}/turn-1/d1"]
        steps = await step_types(run.client, session)
        assert "CallSingleAttemptTool" in steps
