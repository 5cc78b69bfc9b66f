"""Spec matrix 3, 4 and 7 through real Worker processes: Pydantic AI's requires_approval tools
wait durably in Dex, rejections reach the model, and resolve_interrupt and deadlines behave."""

from __future__ import annotations

from collections.abc import Callable

from dex_agents import AgentClient, texts
from dex_agents.testing import (
    ScriptedModelServer,
    ToolRunLog,
    WorkerProcess,
    reply_text,
    reply_tools,
)

from .helpers import events_of, pending_interrupt, step_types, tool_messages, turns_done

MakeWorker = Callable[..., WorkerProcess]
EMAIL = {"to": "ana@example.com", "body": "Hi"}


async def test_approval_waits_beside_a_read_survives_a_restart_and_runs_once(
    make_worker: MakeWorker, model: ScriptedModelServer, client: AgentClient, tool_log: ToolRunLog
) -> None:
    model.enqueue(
        reply_tools(("r1", "get_weather", {"city": "Lima"}), ("w1", "send_email", EMAIL)),
        reply_text("Email sent, and it is sunny in Lima."),
    )
    worker = make_worker().start()
    session = await client.start_session("TriageAgent", "Weather in Lima, then email Ana.")
    snapshot = await client.wait_for(
        session,
        lambda s: (
            pending_interrupt("w1")(s)
            and any(c.tool_call_id == "r1" and c.status == "succeeded" for c in s.tool_calls)
        ),
    )
    (interrupt,) = snapshot.pending_interrupts
    assert (interrupt.kind, interrupt.tool_name) == ("tool_approval", "send_email")
    assert {c.tool_call_id: (c.effect, c.requires_approval) for c in snapshot.tool_calls} == {
        "r1": ("read", False),
        "w1": ("non_idempotent_write", True),
    }

    worker.kill()  # the approval outlives the Worker
    assert tool_log.count("send_email") == 0
    worker.start()
    assert await client.resolve_interrupt(session, "w1", approved=True)
    await client.wait_for(session, turns_done(1))
    worker.stop()

    (email,) = tool_log.entries("send_email")
    assert (email["approved"], email["key"]) == (True, f"{session}/turn-1/w1")
    assert tool_log.count("get_weather") == 1
    assert tool_messages(model, 1) == {"r1": "Sunny in Lima", "w1": "email sent to ana@example.com"}
    assert await step_types(client, session) == [
        "StartAgentSession",
        "RunModel",
        "CallTool",
        "AwaitToolApproval",
        "ResumeTurn",
        "CallSingleAttemptTool",
        "RunModel",
        "AwaitUserMessage",
    ]


async def test_rejected_write_never_runs_and_the_model_sees_the_message(
    make_worker: MakeWorker, model: ScriptedModelServer, client: AgentClient, tool_log: ToolRunLog
) -> None:
    model.enqueue(
        reply_tools(("w1", "send_email", EMAIL)),
        reply_text("Understood, I will not send it."),
        reply_tools(("w2", "send_email", EMAIL)),
        reply_text("Not sent."),
    )
    with make_worker():
        session = await client.start_session("TriageAgent", "Email Ana.")
        await client.wait_for(session, pending_interrupt("w1"))
        assert await client.resolve_interrupt(
            session, "w1", approved=False, rejection_message="Do not email Ana today."
        )
        await client.wait_for(session, turns_done(1))
        assert await client.send_user_message(session, "Email Ana again.")
        await client.wait_for(session, pending_interrupt("w2"))
        assert await client.resolve_interrupt(session, "w2", approved=False)
        snapshot = await client.wait_for(session, turns_done(2))

    assert tool_log.count("send_email") == 0
    assert tool_messages(model, 1) == {"w1": "Do not email Ana today."}
    assert tool_messages(model, 3)["w2"] == texts.DEFAULT_REJECTION_TEXT
    finished = await events_of(client, session, "tool_call_finished")
    assert [f["status"] for f in finished] == ["rejected", "rejected"]
    stored = [m.tool_output for m in snapshot.messages if m.role == "tool"]
    assert stored == ["Do not email Ana today.", texts.DEFAULT_REJECTION_TEXT]


async def test_resolve_interrupt_twice_returns_false_the_second_time(
    make_worker: MakeWorker, model: ScriptedModelServer, client: AgentClient, tool_log: ToolRunLog
) -> None:
    model.enqueue(reply_tools(("w1", "send_email", EMAIL)), reply_text("Sent."))
    with make_worker():
        session = await client.start_session("TriageAgent", "Email Ana.")
        await client.wait_for(session, pending_interrupt("w1"))
        assert await client.resolve_interrupt(session, "w1", approved=True) is True
        assert await client.resolve_interrupt(session, "w1", approved=True) is False
        assert await client.resolve_interrupt(session, "w1", approved=False) is False
        await client.wait_for(session, turns_done(1))

    assert tool_log.count("send_email") == 1


async def test_an_approval_deadline_rejects_the_call(
    make_worker: MakeWorker, model: ScriptedModelServer, client: AgentClient, tool_log: ToolRunLog
) -> None:
    model.enqueue(reply_tools(("w1", "send_email", EMAIL)), reply_text("Nobody approved it."))
    with make_worker(APPROVAL_DEADLINE_SECONDS="1"):
        session = await client.start_session("TriageAgent", "Email Ana.")
        snapshot = await client.wait_for(session, pending_interrupt("w1"))
        assert snapshot.pending_interrupts[0].deadline is not None
        await client.wait_for(session, turns_done(1), timeout=30)
        assert await client.resolve_interrupt(session, "w1", approved=True) is False

    assert tool_log.count("send_email") == 0
    assert tool_messages(model, 1) == {"w1": texts.APPROVAL_DEADLINE_PASSED}


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
