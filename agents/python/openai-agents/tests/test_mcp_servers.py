"""An agent's own MCP servers (`Agent(mcp_servers=[MCPServerStdio(...)])`) through a real
Worker process: the runner lists the server's tools with the SDK's MCP classes, offers them
gated like function tools, and each call runs in its own tool Step through the server, with
the idempotency key in `_meta` and the effect from the tool's annotations. The stdio server
(`dex_agents.testing.mcp_server`) counts its real runs in the tool log."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from agents import Agent, RunConfig
from agents.mcp import MCPServerStdio
from dex_agents import texts
from dex_agents.testing import (
    RunnerDriver,
    ScriptedModelServer,
    ToolRunLog,
    events_of,
    pending_interrupt,
    reply_text,
    reply_tools,
    step_types,
    turns_done,
)
from dex_agents.testing.shared_worker import SessionRun, SharedWorkerSuite, WorkerApp, responses
from dex_agents.types import AgentSnapshot

from dex_agents_openai_agents import OpenAIAgentsRunner

ROOT = Path(__file__).parent.parent
TOOL_STEPS = {"AwaitToolApproval", "CallSingleAttemptTool", "CallTool"}


def _succeeded(tool_call_id: str) -> Callable[[AgentSnapshot], bool]:
    return lambda snapshot: any(
        call.tool_call_id == tool_call_id and call.status == "succeeded"
        for call in snapshot.tool_calls
    )


class TestAgentMcpServers(SharedWorkerSuite):
    app = WorkerApp(
        worker_target="tests.apps.mcp_servers:flows", worker_cwd=ROOT, model_view=responses
    )

    async def test_calls_run_in_tool_steps_and_the_write_waits_for_approval(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(
            reply_tools(
                ("r1", "lookup_order", {"order_id": "o-1"}),
                ("w1", "refund_order", {"order_id": "o-1"}),
            ),
            reply_text("Shipped, and refunded."),
        )
        session = await run.client.start_session("SdkMcpAgent", "Where is o-1? Refund it.")
        await run.client.wait_for(session, pending_interrupt("w1"))
        # The read runs in its tool Step; the write waits for its approval.
        await run.client.wait_for(session, _succeeded("r1"))
        assert run.tool_log.count("refund_order") == 0
        # A new Worker process lists the server at the call's tool Step and runs it.
        run.kill_and_restart()
        assert await run.client.resolve_interrupt(session, "w1", approved=True)
        snapshot = await run.client.wait_for(session, turns_done(1))

        offered = {tool["name"]: tool for tool in run.requests[0].body["tools"]}
        assert offered["lookup_order"]["description"] == "The status of an order."
        assert offered["refund_order"]["parameters"]["properties"]["order_id"]["type"] == "string"
        assert run.tool_outputs(1) == {
            "r1": "order o-1 is shipped",
            "w1": "order o-1 is refunded",
        }
        assert [(e["tool"], e["key"]) for e in run.tool_log.entries()] == [
            ("lookup_order", f"{session}/turn-1/r1"),
            ("refund_order", f"{session}/turn-1/w1"),
        ]
        deferred = await events_of(run.client, session, "tool_call_deferred")
        assert {e["tool_call_id"]: (e["effect"], e["requires_approval"]) for e in deferred} == {
            "r1": ("read", False),
            "w1": ("unclassified", True),
        }
        steps = [s for s in await step_types(run.client, session) if s in TOOL_STEPS]
        assert sorted(steps) == ["AwaitToolApproval", "CallSingleAttemptTool", "CallTool"]
        assert snapshot.messages[-1].text == "Shipped, and refunded."

    async def test_a_rejected_write_never_reaches_the_server(self, run: SessionRun) -> None:
        run.model.enqueue(
            reply_tools(("w1", "refund_order", {"order_id": "o-2"})),
            reply_text("The refund was not approved."),
        )
        session = await run.client.start_session("SdkMcpAgent", "Refund o-2.")
        await run.client.wait_for(session, pending_interrupt("w1"))
        assert await run.client.resolve_interrupt(session, "w1", approved=False)
        snapshot = await run.client.wait_for(session, turns_done(1))

        assert run.tool_log.entries() == []
        assert run.tool_outputs(1) == {"w1": texts.DEFAULT_REJECTION_TEXT}
        assert "CallSingleAttemptTool" not in await step_types(run.client, session)
        assert snapshot.messages[-1].text == "The refund was not approved."


async def test_a_handoff_targets_servers_and_their_approval_setting(
    model: ScriptedModelServer, tool_log: ToolRunLog, run_config: RunConfig
) -> None:
    """In one process: the MCP tools of an agent reached by a handoff are deferred like its
    function tools, the server's `require_approval` asks for approval over the read effect, and
    the call runs once through the server the runner connected."""
    orders = MCPServerStdio(
        params={
            "command": sys.executable,
            "args": ["-m", "dex_agents.testing.mcp_server"],
            "env": {"TOOL_LOG": str(tool_log.path)},
        },
        name="orders",
        require_approval={"always": {"tool_names": ["lookup_order"]}},
        client_session_timeout_seconds=30,
    )
    billing = Agent(name="Orders", model="gpt-4.1", mcp_servers=[orders])
    front = Agent(name="Front", model="gpt-4.1", handoffs=[billing])
    driver = RunnerDriver(OpenAIAgentsRunner(front, run_config=run_config))
    model.enqueue(
        reply_tools(("h1", "transfer_to_orders", {})),
        reply_tools(("r1", "lookup_order", {"order_id": "o-3"})),
        reply_text("o-3 is shipped."),
    )

    turn = await driver.turn("Where is o-3?")

    assert [(r.tool_name, r.effect, r.requires_approval, r.output) for r in turn.records] == [
        ("lookup_order", "read", True, "order o-3 is shipped")
    ]
    assert [(e["tool"], e["key"]) for e in tool_log.entries()] == [
        ("lookup_order", "session-1/turn-1/r1")
    ]
    assert "lookup_order" not in responses.tool_names(model.requests[0])
    assert "lookup_order" in responses.tool_names(model.requests[1])
    assert responses.tool_outputs(model.requests[2])["r1"] == "order o-3 is shipped"
    assert turn.new_messages[-1].text == "o-3 is shipped."
