"""An adapter's MCP tool source through a real Worker process, as one pytest suite: the tools'
annotations decide their policies, each call runs once in its own tool Step with its
idempotency key, an approved write runs once after a Worker restart, and explicit policies win
over the annotations. Every adapter that takes `McpToolSource`s runs it.

    # tests/test_mcp.py
    from dex_agents.testing.mcp_source import McpSourceSuite
    from dex_agents.testing.shared_worker import WorkerApp

    class TestMcpToolSource(McpSourceSuite):
        app = WorkerApp(worker_target="tests.apps.mcp:flows", worker_cwd=ROOT)

The app contract. The MCP server, named `local`, has the tools `lookup` (readOnlyHint:
"sunny in {city}"), `set_value` (idempotentHint: "{name}={value}") and `delete_item` (no read
or idempotent hint: "deleted {item}"), and logs each run with the idempotency key it got to
$TOOL_LOG, as the repository's `agents/python/core/tests/mcp/server.py` does over stdio.
`worker_target` names flows of two flow types running the adapter's agent on the scripted
model server at $DEX_AGENTS_SCRIPTED_MODEL_URL:

- `McpAgent`: the tool source `McpToolSource([local])`, and the agent's own tool
  `local_note(text)`, a read, answering "noted: {text}";
- `McpPolicies`: `McpToolSource([local], policies={"local__delete_item":
  ToolPolicy(effect="idempotent_write")})`, under the session option `tool_policies={
  "local__lookup": ToolPolicy(effect="non_idempotent_write", requires_approval=False)}`.
"""

from __future__ import annotations

from typing import Any

from .model_server import RecordedRequest, reply_text, reply_tools
from .sessions import events_of, pending_interrupt, step_types, turns_done
from .shared_worker import SessionRun, SharedWorkerSuite


def offered_tools(request: RecordedRequest) -> dict[str, dict[str, Any]]:
    """The function tools a request offers, by name: Chat Completions nests each one under
    `function`, Responses does not."""
    tools = [tool.get("function", tool) for tool in request.body.get("tools", [])]
    return {tool["name"]: tool for tool in tools}


class McpSourceSuite(SharedWorkerSuite):
    """Subclass it as `Test...` with `app = WorkerApp(...)` (see the module docstring)."""

    async def test_read_and_idempotent_tools_run_once_in_tool_steps(self, run: SessionRun) -> None:
        run.model.enqueue(
            reply_tools(
                ("r1", "local__lookup", {"city": "Lima"}),
                ("i1", "local__set_value", {"name": "mode", "value": "eco"}),
                ("n1", "local_note", {"text": "asked"}),
            ),
            reply_text("Sunny; eco is on."),
        )
        session = await run.client.start_session("McpAgent", "Weather in Lima? Eco mode.")
        snapshot = await run.client.wait_for(session, turns_done(1))

        offered = offered_tools(run.requests[0])
        assert {"local__lookup", "local__set_value", "local__delete_item", "local_note"} <= set(
            offered
        )
        lookup = offered["local__lookup"]
        assert lookup["description"] == "The weather in a city."
        assert lookup["parameters"]["properties"]["city"]["type"] == "string"
        assert run.tool_outputs(1) == {
            "r1": "sunny in Lima",
            "i1": "mode=eco",
            "n1": "noted: asked",
        }
        assert {(e["tool"], e["key"]) for e in run.tool_log.entries()} == {
            ("lookup", f"{session}/turn-1/r1"),
            ("set_value", f"{session}/turn-1/i1"),
        }
        deferred = await events_of(run.client, session, "tool_call_deferred")
        assert {e["tool_call_id"]: (e["effect"], e["requires_approval"]) for e in deferred} == {
            "r1": ("read", False),
            "i1": ("idempotent_write", False),
            "n1": ("read", False),
        }
        steps = await step_types(run.client, session)
        assert steps.count("CallTool") == 3
        assert "AwaitToolApproval" not in steps
        assert snapshot.messages[-1].text == "Sunny; eco is on."

    async def test_a_destructive_tool_waits_for_approval_and_runs_once_after_a_restart(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(
            reply_tools(("d1", "local__delete_item", {"item": "old-report"})),
            reply_text("Deleted."),
        )
        session = await run.client.start_session("McpAgent", "Delete the old report.")
        # No annotation says read or idempotent: the session's default, unclassified, asks.
        await run.client.wait_for(session, pending_interrupt("d1"))
        assert run.tool_log.count("delete_item") == 0
        # A new Worker process runs the call from the record's reference, with no listing.
        run.kill_and_restart()
        assert await run.client.resolve_interrupt(session, "d1", approved=True)
        snapshot = await run.client.wait_for(session, turns_done(1))

        assert [e["key"] for e in run.tool_log.entries("delete_item")] == [f"{session}/turn-1/d1"]
        assert run.tool_outputs(1) == {"d1": "deleted old-report"}
        (deferred,) = await events_of(run.client, session, "tool_call_deferred")
        assert (deferred["effect"], deferred["requires_approval"]) == ("unclassified", True)
        (finished,) = await events_of(run.client, session, "tool_call_finished")
        assert finished["status"] == "succeeded"
        assert snapshot.messages[-1].text == "Deleted."
        steps = await step_types(run.client, session)
        assert [
            s for s in steps if s in {"AwaitToolApproval", "CallSingleAttemptTool", "CallTool"}
        ] == ["AwaitToolApproval", "CallSingleAttemptTool"]

    async def test_explicit_policies_win_over_the_annotations(self, run: SessionRun) -> None:
        run.model.enqueue(
            reply_tools(
                ("r1", "local__lookup", {"city": "Lima"}),
                ("d1", "local__delete_item", {"item": "old-report"}),
            ),
            reply_text("Done."),
        )
        session = await run.client.start_session("McpPolicies", "Lima, and delete it.")
        await run.client.wait_for(session, turns_done(1))

        deferred = await events_of(run.client, session, "tool_call_deferred")
        assert {e["tool_call_id"]: (e["effect"], e["requires_approval"]) for e in deferred} == {
            # The session's ToolPolicy over the readOnlyHint.
            "r1": ("non_idempotent_write", False),
            # The source's ToolPolicy over the session's default (unclassified).
            "d1": ("idempotent_write", False),
        }
        assert sorted(e["tool"] for e in run.tool_log.entries()) == ["delete_item", "lookup"]
        steps = await step_types(run.client, session)
        assert (steps.count("CallSingleAttemptTool"), steps.count("CallTool")) == (1, 1)
        assert "AwaitToolApproval" not in steps
