"""Pydantic AI's own approvals through a real Worker (the spec matrix, items 3, 4 and 7, is
test_matrix.py): an ApprovalRequiredToolset that decides per call waits durably in Dex."""

from __future__ import annotations

from collections.abc import Callable

from dex_agents import AgentClient
from dex_agents.testing import (
    ScriptedModelServer,
    ToolRunLog,
    WorkerProcess,
    pending_interrupt,
    reply_text,
    reply_tools,
    turns_done,
)

from .helpers import tool_messages

MakeWorker = Callable[..., WorkerProcess]
EMAIL = {"to": "ana@example.com", "body": "Hi"}


async def test_a_tool_asking_approval_at_run_time_waits_for_it_under_its_policy(
    make_worker: MakeWorker, model: ScriptedModelServer, client: AgentClient, tool_log: ToolRunLog
) -> None:
    """An ApprovalRequiredToolset decides per call; unclassified tools wait for approval by
    default, and the approved call runs with ctx.tool_call_approved."""
    model.enqueue(
        reply_tools(("big", "refund", {"order_id": "o-9", "amount": 500})),
        reply_text("Refunded."),
    )
    with make_worker():
        session = await client.start_session("TriageAgent", "Refund 500 on o-9.")
        await client.wait_for(session, pending_interrupt("big"))
        assert tool_log.count("refund") == 0
        assert await client.resolve_interrupt(session, "big", approved=True)
        await client.wait_for(session, turns_done(1))

    assert [e["order_id"] for e in tool_log.entries("refund")] == ["o-9"]
    assert tool_messages(model, 1) == {"big": "refunded 500 on o-9"}
