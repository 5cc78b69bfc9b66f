"""Spec matrix 3, 4 and 7 through real Worker processes: Dex runs the approvals of the SDK's
gated tools, durably."""

from __future__ import annotations

from dex_agents import texts
from dex_agents.testing import reply_text, reply_tools

from .helpers import events_of, pending_interrupt, step_types, tool_outputs, turns_done


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
    session = await client.start_session("SupportAgent", "Weather in Lima, then email Ana.")
    snapshot = await client.wait_for(
        session,
        lambda s: (
            pending_interrupt("w1")(s)
            and any(c.tool_call_id == "r1" and c.status == "succeeded" for c in s.tool_calls)
        ),
    )
    (interrupt,) = snapshot.pending_interrupts
    assert (interrupt.kind, interrupt.tool_name) == ("tool_approval", "send_email")
    assert {c.tool_call_id: (c.effect, c.status) for c in snapshot.tool_calls} == {
        "r1": ("read", "succeeded"),
        "w1": ("non_idempotent_write", "awaiting_approval"),
    }
    assert len(model.requests) == 1

    worker.kill()  # the approval outlives the Worker
    assert tool_log.count("send_email") == 0
    worker.start()
    assert await client.resolve_interrupt(session, "w1", approved=True)
    await client.wait_for(session, turns_done(1))
    worker.stop()

    [email] = tool_log.entries("send_email")
    assert email["key"] == f"{session}/turn-1/w1"
    assert tool_log.count("get_weather") == 1
    assert tool_outputs(model, 1) == {
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


async def test_rejected_write_never_runs_and_the_model_sees_the_message(
    make_worker, model, client, tool_log
):
    model.enqueue(
        reply_tools(("w1", "send_email", {"to": "bob@example.com", "body": "Hi"})),
        reply_text("Understood, I will not send it."),
        reply_tools(("w2", "send_email", {"to": "bob@example.com", "body": "Hi"})),
        reply_text("Not sent."),
    )
    with make_worker():
        session = await client.start_session("SupportAgent", "Email Bob.")
        await client.wait_for(session, pending_interrupt("w1"))
        assert await client.resolve_interrupt(
            session, "w1", approved=False, rejection_message="Do not email Bob today."
        )
        await client.wait_for(session, turns_done(1))
        assert await client.send_user_message(session, "Email Bob again.")
        await client.wait_for(session, pending_interrupt("w2"))
        assert await client.resolve_interrupt(session, "w2", approved=False)
        await client.wait_for(session, turns_done(2))

    assert tool_log.count("send_email") == 0
    assert tool_outputs(model, 1) == {"w1": "Do not email Bob today."}
    assert tool_outputs(model, 3)["w2"] == texts.DEFAULT_REJECTION_TEXT
    finished = await events_of(client, session, "tool_call_finished")
    assert [f["status"] for f in finished] == ["rejected", "rejected"]
    assert (await step_types(client, session))[:5] == [
        "StartAgentSession",
        "RunModel",
        "AwaitToolApproval",
        "ResumeTurn",
        "RunModel",
    ]


async def test_resolve_interrupt_twice_returns_false_the_second_time(
    make_worker, model, client, tool_log
):
    model.enqueue(
        reply_tools(("w1", "send_email", {"to": "eve@example.com", "body": "Hi"})),
        reply_text("Sent."),
    )
    with make_worker():
        session = await client.start_session("SupportAgent", "Email Eve.")
        await client.wait_for(session, pending_interrupt("w1"))
        assert await client.resolve_interrupt(session, "w1", approved=True) is True
        assert await client.resolve_interrupt(session, "w1", approved=True) is False
        assert await client.resolve_interrupt(session, "w1", approved=False) is False
        await client.wait_for(session, turns_done(1))
    assert tool_log.count("send_email") == 1


async def test_an_approval_deadline_rejects_the_call(make_worker, model, client, tool_log):
    model.enqueue(
        reply_tools(("w1", "send_email", {"to": "zed@example.com", "body": "Hi"})),
        reply_text("Nobody approved the email."),
    )
    with make_worker(APPROVAL_DEADLINE_SECONDS="1"):
        session = await client.start_session("SupportAgent", "Email Zed.")
        await client.wait_for(session, turns_done(1))
        assert await client.resolve_interrupt(session, "w1", approved=True) is False

    assert tool_log.count("send_email") == 0
    assert tool_outputs(model, 1) == {"w1": texts.APPROVAL_DEADLINE_PASSED}
