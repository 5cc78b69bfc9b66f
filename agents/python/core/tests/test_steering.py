"""Steering and cancellation rules, one test per rule: through real Worker processes where a
call is in flight or a Worker dies, in this process (StepHarness) where only the Steps' rules
are at stake. The tests on tests.apps.basic share one Worker per backend; those that kill it
start it again (kill, commit while no Worker runs, start)."""

from __future__ import annotations

import json
from pathlib import Path

from dex_agents import rpcs, texts
from dex_agents.testing import ScriptedReply, reply_text, reply_tools
from dex_agents.testing.shared_worker import SessionRun, SharedWorkerSuite, WorkerApp

from .helpers import events_of, pending_interrupt, step_types, tool_messages, turns_done, wait_until

TASKS = "tests.apps.tasks:flows"


def running(snapshot) -> bool:
    return snapshot.state is not None and snapshot.state.active_turn_id is not None


def read_done_approval_pending(snapshot) -> bool:
    """The turn's read finished and its write waits for approval."""
    return pending_interrupt("w1")(snapshot) and any(
        c.tool_call_id == "r1" and c.is_final for c in snapshot.tool_calls
    )


async def test_a_steer_abandons_a_waiting_approval_but_not_a_finished_read(
    harness, model, client, tool_log
):
    model.enqueue(
        reply_tools(
            ("r1", "get_weather", {"city": "Oslo"}),
            ("w1", "send_email", {"to": "a@example.com", "body": "hi"}),
        ),
        reply_text("OK, no email."),
    )
    session = await client.start_session("Assistant", "Weather, then email")
    await harness.run_until_idle(session)
    assert read_done_approval_pending(await client.get_agent_snapshot(session))
    assert await client.steer_user_message(session, text="Don't email anyone")
    await harness.run_until_idle(session)
    assert turns_done(2)(await client.get_agent_snapshot(session))
    assert await client.resolve_interrupt(session, "w1", approved=True) is False

    assert tool_log.count("get_weather") == 1
    assert tool_log.count("send_email") == 0
    seen = tool_messages(model, 1)
    assert json.loads(seen["r1"])["city"] == "Oslo"  # a read that ran keeps its result
    assert seen["w1"] == texts.STEERED_REJECTION


async def test_cancel_turn_rejects_waiting_calls_and_ends_the_turn(
    harness, model, client, tool_log
):
    model.enqueue(
        reply_tools(
            ("r1", "get_weather", {"city": "Oslo"}),
            ("w1", "send_email", {"to": "c@example.com", "body": "hi"}),
        ),
        reply_text("Cancelled; what next?"),
    )
    session = await client.start_session("Assistant", "Weather, then email")
    await harness.run_until_idle(session)
    assert read_done_approval_pending(await client.get_agent_snapshot(session))
    assert await client.cancel_turn(session)
    # No Step runs in between here, so the turn is still active: true again, no change. (With
    # a Worker, the turn may already have ended, and the answer would be false.)
    assert await client.cancel_turn(session, "turn-1")
    await harness.run_until_idle(session)
    snapshot = await client.get_agent_snapshot(session)
    assert turns_done(1)(snapshot)
    assert await client.send_user_message(session, "What happened?")
    await harness.run_until_idle(session)
    assert turns_done(2)(await client.get_agent_snapshot(session))

    assert tool_log.count("send_email") == 0
    assert snapshot.pending_interrupts == []
    finished = await events_of(client, session, "tool_call_finished")
    assert {f["tool_call_id"]: f["status"] for f in finished} == {
        "r1": "succeeded",
        "w1": "rejected",
    }
    resolved = await events_of(client, session, "interrupt_resolved")
    assert resolved == [
        {
            "interrupt_id": "w1",
            "approved": False,
            "rejection_message": texts.TURN_CANCELLED_REJECTION,
            "kind": "tool_approval",
            "answered": False,
            "cancellation_reason": "turn_cancelled",
        }
    ]
    assert await events_of(client, session, "turn_cancelled") == [{"message_count": 3}]
    # The turn kept its transcript: the runner's unfinished messages with every result.
    results = tool_messages(model, 1)
    assert results["w1"] == texts.TURN_CANCELLED_REJECTION


async def test_steering_never_abandons_a_started_task(
    make_worker, model, client, tool_log, tmp_path: Path
):
    tasks = tmp_path / "tasks.json"
    model.enqueue(reply_tools(("t1", "start_job", {"name": "build"})), reply_text("On it."))
    with make_worker(TASKS, TASKS_FILE=str(tasks)):
        session = await client.start_session("Tasks", "Build it")
        await client.wait_for(
            session, lambda s: any(c.status == "waiting_for_task" for c in s.tool_calls)
        )
        assert await client.steer_user_message(session, text="Also test it")
        wait_until(lambda: tool_log.count("poll") >= 2, what="the task to be polled again")
        snapshot = await client.get_agent_snapshot(session)
        assert snapshot.tool_calls[0].status == "waiting_for_task"
        tasks.write_text(json.dumps({"job-build": "done"}))
        await client.wait_for(session, turns_done(2))

    assert tool_log.count("start_job") == 1
    assert tool_messages(model, 1) == {"t1": "job-build finished"}
    started = await events_of(client, session, "tool_task_started")
    assert started == [{"tool_call_id": "t1", "tool_name": "start_job", "task_id": "job-build"}]
    assert await events_of(client, session, "turn_steered") == [
        {"steered_message_count": 1, "message_count": 2}
    ]


async def test_cancel_turn_cancels_a_polled_task(make_worker, model, client, tool_log, tmp_path):
    model.enqueue(reply_tools(("t1", "start_job", {"name": "deploy"})), reply_text("Cancelled."))
    with make_worker(TASKS, TASKS_FILE=str(tmp_path / "tasks.json")):
        session = await client.start_session("Tasks", "Deploy")
        await client.wait_for(
            session, lambda s: any(c.status == "waiting_for_task" for c in s.tool_calls)
        )
        wait_until(lambda: tool_log.count("poll") >= 1, what="a poll")
        assert await client.cancel_turn(session)
        await client.wait_for(session, turns_done(1))

    assert [e["task_id"] for e in tool_log.entries("cancel_task")] == ["job-deploy"]
    finished = await events_of(client, session, "tool_call_finished")
    assert finished == [
        {"tool_call_id": "t1", "tool_name": "start_job", "status": "outcome_unknown"}
    ]
    history = await step_types(client, session)
    assert "CancelToolTask" in history and "FinishTurnCancellation" in history


async def test_a_tool_question_is_answered_before_the_tool_takes_effect(
    make_worker, model, client, tool_log
):
    model.enqueue(reply_tools(("d1", "delete_files", {"path": "/tmp/x"})), reply_text("Deleted."))
    with make_worker(TASKS):
        session = await client.start_session("Tasks", "Delete /tmp/x")
        snapshot = await client.wait_for(session, pending_interrupt("d1-input-1"))
        (question,) = snapshot.pending_interrupts
        assert (question.kind, question.question, question.choices) == (
            "question",
            "Delete everything under this path?",
            ["yes", "no"],
        )
        assert question.allows_free_text is False
        assert await client.answer_question(session, "d1-input-1", "maybe") is False
        assert await client.answer_question(session, "d1-input-1", " ") is False
        assert await client.answer_question(session, "d1-input-1", "yes")
        await client.wait_for(session, turns_done(1))

    assert [e["answer"] for e in tool_log.entries("delete_files")] == ["yes"]
    assert tool_messages(model, 1) == {"d1": "deleted /tmp/x"}
    assert await step_types(client, session) == [
        "StartAgentSession",
        "RunModel",
        "CallSingleAttemptTool",
        "ResumeTurn",
        "AwaitQuestionAnswer",
        "CallSingleAttemptTool",
        "RunModel",
        "AwaitUserMessage",
    ]


async def test_a_queued_plan_mode_message_moved_by_steering_starts_a_planning_turn(
    make_worker, model, client
):
    from dex_agents.types import AgentUserMessage

    model.enqueue(ScriptedReply(text="Working.", hang=True), reply_text("Let me plan."))
    with make_worker("tests.apps.planning:flows"):
        session = await client.start_session("Planner", "Do it")
        model.wait_for_requests(1)
        plan_message = AgentUserMessage(text="Plan it first", plan_mode=True)
        assert await client.send_user_message(session, plan_message)
        queued = (await client.get_agent_snapshot(session)).queued_messages
        assert await client.steer_user_message(session, message_id=queued[0].message_id)
        model.release()
        snapshot = await client.wait_for(session, turns_done(2))

    assert snapshot.state is not None and snapshot.state.interaction_mode == "planning"
    planning_request = model.requests[1].body["messages"]
    assert planning_request[0]["content"].startswith("[Dex] There is no plan yet.")


def test_cancel_turn_cancels_the_steps_the_contract_names() -> None:
    """Each Step type states whether cancel_turn cancels it; the RPC takes the list from them."""
    assert set(rpcs.CANCELLED_BY_CANCEL_TURN) == {
        "RunModel",
        "CompactContext",
        "RecordTurnFailure",
        "AwaitToolApproval",
        "AwaitQuestionAnswer",
        "AwaitTimer",
        "PollToolTask",
    }


class TestSteeringOnOneWorker(SharedWorkerSuite):
    app = WorkerApp(worker_target="tests.apps.basic:flows", worker_cwd=Path(__file__).parent.parent)

    async def test_a_steer_during_a_final_answer_applies_after_the_turn(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(
            ScriptedReply(text="Paris is lovely.", hang=True), reply_text("Rome, then.")
        )
        session = await run.client.start_session("Assistant", "Tell me about Paris")
        run.model.wait_for_requests(run.first_request + 1)
        assert await run.client.steer_user_message(session, text="Actually, Rome")
        run.model.release()
        snapshot = await run.client.wait_for(session, turns_done(2))

        assert [(m.role, m.text) for m in snapshot.messages] == [
            ("user", "Tell me about Paris"),
            ("assistant", "Paris is lovely."),
            ("user", "Actually, Rome"),
            ("assistant", "Rome, then."),
        ]
        assert await step_types(run.client, session) == [
            "StartAgentSession",
            "RunModel",
            "AwaitUserMessage",
            "ApplyTurnControl",
            "RunModel",
            "AwaitUserMessage",
        ]
        assert await events_of(run.client, session, "turn_steered") == []  # the turn had ended

    async def test_a_steer_during_a_model_call_abandons_the_calls_it_requested(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(
            ScriptedReply(
                tool_calls=reply_tools(
                    ("r1", "get_weather", {"city": "Oslo"}),
                    ("w1", "send_email", {"to": "a@example.com", "body": "hi"}),
                ).tool_calls,
                hang=True,
            ),
            reply_text("Switching to Bergen."),
        )
        session = await run.client.start_session("Assistant", "Weather in Oslo and email Ann")
        run.model.wait_for_requests(run.first_request + 1)
        assert await run.client.steer_user_message(session, text="Never mind, Bergen")
        run.model.release()
        snapshot = await run.client.wait_for(session, turns_done(2))

        assert run.tool_log.count() == 0  # steering abandons calls that have not started
        seen = run.tool_outputs(1)
        assert seen == {"r1": texts.STEERED_REJECTION, "w1": texts.STEERED_REJECTION}
        finished = await events_of(run.client, session, "tool_call_finished")
        assert {f["tool_call_id"]: f["status"] for f in finished} == {
            "r1": "rejected",
            "w1": "rejected",
        }
        resolved = await events_of(run.client, session, "interrupt_resolved")
        assert [(r["interrupt_id"], r["cancellation_reason"]) for r in resolved] == [
            ("w1", "steered")
        ]
        steered = await events_of(run.client, session, "turn_steered")
        # The steered turn kept its transcript: the tool-call message and both rejections.
        assert steered == [{"steered_message_count": 1, "message_count": 3}]
        assert snapshot.messages[-2].text == "Never mind, Bergen"
        assert snapshot.messages[-1].text == "Switching to Bergen."
        history = await step_types(run.client, session)
        assert history[:5] == [
            "StartAgentSession",
            "RunModel",
            "CallTool",
            "AwaitToolApproval",
            "ResumeTurn",
        ]
        assert history[-3:] == ["ApplyTurnControl", "RunModel", "AwaitUserMessage"]

    async def test_an_approval_that_commits_before_the_steer_wins_and_the_tool_sees_the_flag(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(
            reply_tools(("w1", "send_email", {"to": "b@example.com", "body": "hi"})),
            reply_text("Fine."),
        )
        session = await run.client.start_session("Assistant", "Email Bo")
        await run.client.wait_for(session, pending_interrupt("w1"))
        run.worker.kill()  # both RPCs commit before any Step sees either
        assert await run.client.resolve_interrupt(session, "w1", approved=True)
        assert await run.client.steer_user_message(session, text="Stop")
        run.worker.start()
        await run.client.wait_for(session, turns_done(2))

        assert run.tool_log.count("send_email") == 0
        assert run.tool_outputs(1) == {"w1": texts.STEERED_REJECTION}
        resolved = await events_of(run.client, session, "interrupt_resolved")
        assert [(r["approved"], r["cancellation_reason"]) for r in resolved] == [(True, None)]

    async def test_cancel_turn_aborts_a_running_model_call(self, run: SessionRun) -> None:
        dropped = run.model.dropped
        run.model.enqueue(ScriptedReply(text="a very long answer", hang=True), reply_text("Next."))
        session = await run.client.start_session("Assistant", "Write an essay")
        run.model.wait_for_requests(run.first_request + 1)
        assert await run.client.cancel_turn(session, "turn-2") is False  # not the active turn
        assert await run.client.cancel_turn(session)
        run.model.wait_for_dropped(dropped + 1)  # the model call was really aborted
        snapshot = await run.client.wait_for(session, turns_done(1))
        assert await run.client.cancel_turn(session) is False  # no active turn
        assert await run.client.send_user_message(session, "Short one")
        snapshot = await run.client.wait_for(session, turns_done(2))

        assert [m.text for m in snapshot.messages] == ["Write an essay", "Short one", "Next."]
        assert await events_of(run.client, session, "turn_cancelled") == [{"message_count": 0}]
        history = await run.client.get_step_history(session)
        assert [(s.step_type, s.status) for s in history[:5]] == [
            ("StartAgentSession", "succeeded"),
            ("RunModel", "cancelled"),
            ("FinishTurnCancellation", "succeeded"),
            ("ApplyTurnControl", "succeeded"),
            ("AwaitUserMessage", "succeeded"),
        ]
        assert snapshot.usage.model_calls == 1  # the dropped call recorded no usage

    async def test_cancel_turn_survives_a_worker_killed_before_finish_turn_cancellation(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(reply_tools(("w1", "send_email", {"to": "d@example.com", "body": "hi"})))
        session = await run.client.start_session("Assistant", "Email Dee")
        await run.client.wait_for(session, pending_interrupt("w1"))
        run.worker.kill()
        assert await run.client.cancel_turn(session)  # commits while no Worker runs
        run.worker.start()
        snapshot = await run.client.wait_for(session, turns_done(1))

        assert run.tool_log.count("send_email") == 0
        assert snapshot.state is not None and snapshot.state.last_turn_error is None
        assert await events_of(run.client, session, "turn_cancelled") == [{"message_count": 2}]
        assert "FinishTurnCancellation" in await step_types(run.client, session)

    async def test_a_leftover_cancellation_wake_from_an_earlier_turn_changes_nothing(
        self, run: SessionRun
    ) -> None:
        from dex_agents import store
        from dex_agents.db import Database

        run.model.enqueue(
            reply_tools(("w1", "send_email", {"to": "e@example.com", "body": "1"})),
            reply_text("Sent."),
        )
        session = await run.client.start_session("Assistant", "Email Eve")
        await run.client.wait_for(session, pending_interrupt("w1"))
        database = Database(run.client.database_url)
        await database.write(
            lambda conn: store.publish(
                conn, session, store.TOOL_CALL_CANCELLATIONS, '{"reason":"steered"}', "w1"
            )
        )
        database.close()
        snapshot = await run.client.get_agent_snapshot(session)
        assert pending_interrupt("w1")(snapshot)  # the wake found neither flag: it waits again
        assert await run.client.resolve_interrupt(session, "w1", approved=True)
        await run.client.wait_for(session, turns_done(1))
        assert run.tool_log.count("send_email") == 1

    async def test_turn_control_rpcs_refuse_bad_requests(self, run: SessionRun) -> None:
        run.model.enqueue(
            ScriptedReply(text="One.", hang=True), reply_text("Two."), reply_text("Three.")
        )
        session = await run.client.start_session("Assistant")
        await run.client.wait_for(session, lambda s: s.state is not None)
        # No active turn: a steer is queued like any message.
        assert await run.client.steer_user_message(session, text="first") is True
        run.model.wait_for_requests(run.first_request + 1)
        assert await run.client.steer_user_message(session) is False
        assert await run.client.steer_user_message(session, text="x", message_id="1") is False
        assert await run.client.steer_user_message(session, text="  ") is False
        assert await run.client.steer_user_message(session, message_id="999999") is False
        assert await run.client.delete_queued_message(session, "999999") is False

        assert await run.client.send_user_message(session, "queued A")
        assert await run.client.send_user_message(session, "queued B")
        queued = (await run.client.get_agent_snapshot(session)).queued_messages
        assert [q.message.text for q in queued] == ["queued A", "queued B"]
        assert await run.client.delete_queued_message(session, queued[0].message_id)
        assert await run.client.steer_user_message(session, message_id=queued[1].message_id)
        snapshot = await run.client.get_agent_snapshot(session)
        assert snapshot.queued_messages == []
        assert [m.message.text for m in snapshot.steered_messages] == ["queued B"]
        run.model.release()
        snapshot = await run.client.wait_for(session, turns_done(2))

        assert [m.text for m in snapshot.messages] == ["first", "One.", "queued B", "Two."]

    async def test_a_turn_without_accepts_turn_control_refuses_steer_and_cancel(
        self, run: SessionRun
    ) -> None:
        """A turn that a Worker without steering started holds waits a steer never wakes."""
        from dex_agents import store
        from dex_agents.db import Database

        run.model.enqueue(ScriptedReply(text="Done.", hang=True))
        session = await run.client.start_session("Assistant", "Go")
        run.model.wait_for_requests(run.first_request + 1)
        database = Database(run.client.database_url)

        def as_older_worker(conn) -> None:
            record = store.lock_session(conn, session)
            state = record.active_state.model_copy(update={"accepts_turn_control": False})
            record.state = state
            store.save_session(conn, record)

        await database.write(as_older_worker)
        database.close()
        assert await run.client.steer_user_message(session, text="Stop") is False
        assert await run.client.cancel_turn(session) is False
        run.model.release()
        snapshot = await run.client.wait_for(session, turns_done(1))
        assert snapshot.steered_messages == [] and snapshot.messages[-1].text == "Done."
