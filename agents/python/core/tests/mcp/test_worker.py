"""MCP tools through a real Worker process running a Stepwise agent: each call in its own tool
Step with the idempotency key in `_meta`, SIGKILL inside a call, a read re-issued."""

from __future__ import annotations

from typing import Any

import pytest

from dex_agents import texts
from dex_agents.testing import reply_text, reply_tools

from ..helpers import events_of, step_types, tool_messages, turns_done, wait_until
from .servers import HttpServerProcess, RunLog

APP = "tests.mcp.app:flows"


@pytest.fixture
def worker(make_worker: Any, run_log: RunLog, http_server: HttpServerProcess) -> Any:
    return make_worker(APP, MCP_TEST_RUN_LOG=str(run_log.path), MCP_TEST_URL=http_server.url)


async def test_mcp_tools_run_in_tool_steps_with_the_key_in_meta(
    worker: Any, model: Any, client: Any, run_log: RunLog
) -> None:
    model.enqueue(
        reply_tools(
            ("r1", "local__lookup", {"city": "Lima"}),
            ("i1", "remote__set_value", {"name": "mode", "value": "eco"}),
            ("e1", "local__broken", {}),
        ),
        reply_text("Done."),
    )
    with worker.start():
        session = await client.start_session("Mcp", "Look up Lima and set eco mode.")
        snapshot = await client.wait_for(session, turns_done(1))

    offered = {tool["function"]["name"] for tool in model.requests[0].body["tools"]}
    assert {"local__lookup", "remote__lookup", "remote__hang", "local__set_value"} <= offered
    results = tool_messages(model, 1)
    assert results["r1"] == "sunny in Lima"
    assert results["i1"] == "mode=eco"
    assert "the broken tool broke" in results["e1"]
    keys = {run["tool"]: run["key"] for run in run_log.runs()}
    assert keys == {
        "lookup": f"{session}/turn-1/r1",
        "set_value": f"{session}/turn-1/i1",
        "broken": f"{session}/turn-1/e1",
    }
    finished = await events_of(client, session, "tool_call_finished")
    assert {f["tool_call_id"]: f["status"] for f in finished} == {
        "r1": "succeeded",
        "i1": "succeeded",
        "e1": "failed",
    }
    # read and idempotent_write (and the read-annotated broken tool) run in CallTool, with
    # no approval asked.
    steps = await step_types(client, session)
    assert steps.count("CallTool") == 3
    assert "AwaitToolApproval" not in steps
    assert snapshot.messages[-1].text == "Done."


async def test_sigkill_inside_a_destructive_call_records_outcome_unknown_once(
    worker: Any, model: Any, client: Any, run_log: RunLog
) -> None:
    model.enqueue(reply_tools(("d1", "remote__hang", {})), reply_text("It may have happened."))
    worker.start()
    session = await client.start_session("Mcp", "Do the risky thing.")
    # A destructive tool needs approval by default.
    await client.wait_for(session, lambda s: bool(s.pending_interrupts))
    assert await client.resolve_interrupt(session, "d1", approved=True)
    wait_until(lambda: len(run_log.runs("hang")) == 1, what="the call to start")
    worker.kill()
    worker.start()
    await client.wait_for(session, turns_done(1))
    worker.stop()

    assert len(run_log.runs("hang")) == 1
    assert tool_messages(model, 1) == {"d1": texts.OUTCOME_UNKNOWN_TEXT}
    finished = await events_of(client, session, "tool_call_finished")
    assert [f["status"] for f in finished] == ["outcome_unknown"]


async def test_an_interrupted_read_is_reissued_with_the_same_key(
    worker: Any, model: Any, client: Any, run_log: RunLog
) -> None:
    model.enqueue(reply_tools(("r1", "local__slow_read", {})), reply_text("Read it."))
    worker.start()
    session = await client.start_session("Mcp", "Read slowly.")
    wait_until(lambda: len(run_log.runs("slow_read")) == 1, what="the read to start")
    worker.kill()
    worker.start()
    await client.wait_for(session, turns_done(1))
    worker.stop()

    runs = run_log.runs("slow_read")
    assert [run["key"] for run in runs] == [f"{session}/turn-1/r1"] * 2
    assert tool_messages(model, 1) == {"r1": "read at last"}
    history = await client.get_step_history(session)
    call = next(step for step in history if step.step_type == "CallTool")
    assert (call.status, call.attempts) == ("succeeded", 2)


async def test_a_server_restart_between_listing_and_calling_is_harmless(
    worker: Any, model: Any, client: Any, run_log: RunLog, http_server: HttpServerProcess
) -> None:
    model.enqueue(
        reply_tools(("d1", "remote__delete_item", {"item": "old-report"})),
        reply_text("Deleted."),
    )
    with worker.start():
        session = await client.start_session("Mcp", "Delete the old report.")
        # Listed for the model call; the unannotated write waits for approval meanwhile.
        await client.wait_for(session, lambda s: bool(s.pending_interrupts))
        http_server.stop()
        http_server.start()
        assert await client.resolve_interrupt(session, "d1", approved=True)
        await client.wait_for(session, turns_done(1))

    assert "remote__delete_item" in {t["function"]["name"] for t in model.requests[0].body["tools"]}
    assert tool_messages(model, 1) == {"d1": "deleted old-report"}
    assert [run["key"] for run in run_log.runs("delete_item")] == [f"{session}/turn-1/d1"]
    steps = await step_types(client, session)
    assert "CallSingleAttemptTool" in steps
