"""Spec matrix 3, 4 and 7: approvals wait durably, rejections reach the model, and
resolve_interrupt and deadlines behave as specified."""

from __future__ import annotations

from dex_agents import texts
from dex_agents.testing import reply_text, reply_tools

from .helpers import events_of, pending_interrupt, step_types, tool_messages, turns_done


async def test_approval_waits_beside_a_read_survives_a_restart_and_runs_once(
    make_worker, model, client, tool_log
):
    model.enqueue(
        reply_tools(
            ("r1", "get_weather", {"city": "Lima"}),
            ("w1", "send_email", {"to": "ana@example.com", "body": "Hi"}),
        ),
        reply_text("Email sent, and it is sunny in Lima."),
    )
    worker = make_worker().start()
    session = await client.start_session("Assistant", "Weather in Lima, then email Ana.")
    snapshot = await client.wait_for(
        session,
        lambda s: (
            pending_interrupt("w1")(s)
            and any(c.tool_call_id == "r1" and c.status == "succeeded" for c in s.tool_calls)
        ),
    )
    (interrupt,) = snapshot.pending_interrupts
    assert (interrupt.kind, interrupt.tool_name, interrupt.deadline) == (
        "tool_approval",
        "send_email",
        None,
    )
    assert {c.tool_call_id: c.status for c in snapshot.tool_calls} == {
        "r1": "succeeded",
        "w1": "awaiting_approval",
    }
    assert snapshot.state is not None and snapshot.state.status == "running_tools"

    worker.kill()  # the approval outlives the Worker
    assert tool_log.count("send_email") == 0
    worker.start()
    assert await client.resolve_interrupt(session, "w1", approved=True)
    await client.wait_for(session, turns_done(1))
    worker.stop()

    assert tool_log.count("send_email") == 1
    assert tool_log.count("get_weather") == 1
    assert tool_messages(model, 1) == {
        "r1": '{"city": "Lima", "forecast": "sunny"}',
        "w1": "sent to ana@example.com",
    }
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
    resolved = await events_of(client, session, "interrupt_resolved")
    assert resolved == [
        {
            "interrupt_id": "w1",
            "approved": True,
            "rejection_message": None,
            "kind": "tool_approval",
            "answered": False,
            "cancellation_reason": None,
        }
    ]


async def test_rejected_write_never_runs_and_the_model_sees_the_message(
    harness, model, client, tool_log
):
    model.enqueue(
        reply_tools(("w1", "send_email", {"to": "bob@example.com", "body": "Hi"})),
        reply_text("Understood, I will not send it."),
        reply_tools(("w2", "send_email", {"to": "bob@example.com", "body": "Hi"})),
        reply_text("Not sent."),
    )
    session = await client.start_session("Assistant", "Email Bob.")
    await harness.run_until_idle(session)
    assert pending_interrupt("w1")(await client.get_agent_snapshot(session))
    assert await client.resolve_interrupt(
        session, "w1", approved=False, rejection_message="Do not email Bob today."
    )
    await harness.run_until_idle(session)
    assert turns_done(1)(await client.get_agent_snapshot(session))
    assert await client.send_user_message(session, "Email Bob again.")
    await harness.run_until_idle(session)
    assert pending_interrupt("w2")(await client.get_agent_snapshot(session))
    assert await client.resolve_interrupt(session, "w2", approved=False)
    await harness.run_until_idle(session)
    assert turns_done(2)(await client.get_agent_snapshot(session))

    assert tool_log.count("send_email") == 0
    assert tool_messages(model, 1) == {"w1": "Do not email Bob today."}
    assert tool_messages(model, 3)["w2"] == texts.DEFAULT_REJECTION_TEXT
    finished = await events_of(client, session, "tool_call_finished")
    assert [f["status"] for f in finished] == ["rejected", "rejected"]


async def test_resolve_interrupt_twice_returns_false_the_second_time(
    harness, model, client, tool_log
):
    model.enqueue(
        reply_tools(("w1", "send_email", {"to": "eve@example.com", "body": "Hi"})),
        reply_text("Sent."),
    )
    session = await client.start_session("Assistant", "Email Eve.")
    assert await harness.run_until_idle(session) == [
        "StartAgentSession",
        "RunModel",
        "AwaitToolApproval",
        "ResumeTurn",
    ]
    assert await client.resolve_interrupt(session, "w1", approved=True) is True
    assert await client.resolve_interrupt(session, "w1", approved=True) is False
    assert await client.resolve_interrupt(session, "w1", approved=False) is False
    assert await client.resolve_interrupt(session, "no-such-interrupt", approved=True) is False
    await harness.run_until_idle(session)
    assert turns_done(1)(await client.get_agent_snapshot(session))
    assert tool_log.count("send_email") == 1


async def test_an_approval_deadline_rejects_the_call(make_worker, model, client, tool_log):
    model.enqueue(
        reply_tools(("w1", "send_email", {"to": "joe@example.com", "body": "Hi"})),
        reply_text("Nobody approved it in time."),
    )
    with make_worker(APPROVAL_DEADLINE_SECONDS="1"):
        session = await client.start_session("Assistant", "Email Joe.")
        snapshot = await client.wait_for(session, pending_interrupt("w1"))
        assert snapshot.pending_interrupts[0].deadline is not None
        await client.wait_for(session, turns_done(1), timeout=15)
        assert await client.resolve_interrupt(session, "w1", approved=True) is False

    assert tool_log.count("send_email") == 0
    assert tool_messages(model, 1) == {"w1": texts.APPROVAL_DEADLINE_PASSED}
    resolved = await events_of(client, session, "interrupt_resolved")
    assert resolved[0]["approved"] is False
    assert resolved[0]["rejection_message"] == texts.APPROVAL_DEADLINE_PASSED
