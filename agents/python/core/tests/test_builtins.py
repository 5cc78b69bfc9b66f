"""Built-in tools, plan mode, session settings and compaction through real Worker processes: one
per backend that the tests share (the durable wait's kill starts it again), and one of its own
for the test that restarts its Worker with other settings."""

from __future__ import annotations

import json
from pathlib import Path

from dex_agents.testing import reply_text, reply_tools
from dex_agents.testing.shared_worker import SessionRun, SharedWorkerSuite, WorkerApp

from .helpers import events_of, pending_interrupt, step_types, turns_done

APP = "tests.apps.planning:flows"


async def test_a_worker_killed_during_compact_context_reruns_only_the_summary(
    make_worker, model, client, tool_log
):
    model.enqueue(*(reply_text(f"answer {n}") for n in range(1, 7)))
    worker = make_worker(APP, SUMMARY_SECONDS="30").start()
    session = await client.start_session("Compacting", "question 1")
    for n in range(2, 7):
        await client.wait_for(
            session, lambda s, n=n: turns_done(n - 1)(s) or bool(tool_log.count("summarize"))
        )
        if tool_log.count("summarize"):
            break
        assert await client.send_user_message(session, f"question {n}")
    from .helpers import wait_until

    wait_until(lambda: tool_log.count("summarize") == 1, what="the summary call")
    requests_before = len(model.requests)
    worker.kill()
    worker.env["SUMMARY_SECONDS"] = "0"
    worker.start()
    snapshot = await client.wait_for(session, lambda s: s.context_summary is not None)
    await client.wait_for(session, lambda s: s.state is not None and s.state.active_turn_id is None)
    worker.stop()

    assert [e["attempt"] for e in tool_log.entries("summarize")] == [1, 2]
    assert len(model.requests) == requests_before + 1  # the turn's one model call, after it
    assert snapshot.context_summary is not None and snapshot.context_summary.generation == 1
    started = await events_of(client, session, "compaction_started")
    assert len(started) == 2  # a retried attempt writes it again
    history = await client.get_step_history(session)
    compact = next(s for s in history if s.step_type == "CompactContext")
    assert (compact.status, compact.attempts) == ("succeeded", 2)


class TestBuiltinsOnOneWorker(SharedWorkerSuite):
    app = WorkerApp(worker_target=APP, worker_cwd=Path(__file__).parent.parent)

    async def test_ask_user_waits_for_an_answer(self, run: SessionRun) -> None:
        run.model.enqueue(
            reply_tools(
                ("q1", "ask_user", {"question": "Which city?", "choices": ["Oslo", "Rome"]})
            ),
            reply_text("Rome it is."),
        )
        session = await run.client.start_session("Planner", "Plan a trip")
        snapshot = await run.client.wait_for(session, pending_interrupt("q1"))
        (question,) = snapshot.pending_interrupts
        assert (question.kind, question.question, question.choices) == (
            "question",
            "Which city?",
            ["Oslo", "Rome"],
        )
        assert await run.client.resolve_interrupt(session, "q1", approved=True) is False
        assert await run.client.answer_question(session, "q1", "Rome")
        await run.client.wait_for(session, turns_done(1))

        assert json.loads(run.tool_outputs(1)["q1"]) == {"status": "answered", "answer": "Rome"}
        assert await step_types(run.client, session) == [
            "StartAgentSession",
            "RunModel",
            "AwaitQuestionAnswer",
            "ResumeTurn",
            "RunModel",
            "AwaitUserMessage",
        ]

    async def test_a_declined_question_and_invalid_built_in_arguments(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(
            reply_tools(
                ("q1", "ask_user", {"question": "Sure?"}),
                ("w1", "durable_wait", {"seconds": 1, "reason": "x", "extra": 1, "another": 2}),
                ("t1", "write_todos", "[1, 2]"),
            ),
            reply_text("Noted."),
        )
        session = await run.client.start_session("Planner", "Go")
        await run.client.wait_for(session, pending_interrupt("q1"))
        assert await run.client.resolve_interrupt(session, "q1", approved=False)
        await run.client.wait_for(session, turns_done(1))

        seen = run.tool_outputs(1)
        assert seen["q1"] == "The user declined to answer."
        assert (
            seen["w1"]
            == 'The tool call failed: invalid durable_wait arguments: unknown argument "another"'
        )
        assert seen["t1"] == "The tool call failed: invalid todos: arguments must be a JSON object"

    async def test_durable_wait_survives_a_worker_kill(self, run: SessionRun) -> None:
        run.model.enqueue(
            reply_tools(("w1", "durable_wait", {"seconds": 3, "reason": "let the build finish"})),
            reply_text("Waited."),
        )
        session = await run.client.start_session("Planner", "Wait a bit")
        snapshot = await run.client.wait_for(
            session, lambda s: any(c.status == "waiting_for_timer" for c in s.tool_calls)
        )
        wait_until = snapshot.tool_calls[0].wait_until
        run.worker.kill()
        run.worker.start()
        await run.client.wait_for(session, turns_done(1), timeout=30)

        result = json.loads(run.tool_outputs(1)["w1"])
        assert result["status"] == "completed" and result["reason"] == "let the build finish"
        started = await events_of(run.client, session, "timer_started")
        assert started == [
            {"tool_call_id": "w1", "wait_until": wait_until, "reason": "let the build finish"}
        ]

    async def test_plan_mode_drafts_then_executes_an_approved_plan(self, run: SessionRun) -> None:
        todos = [
            {"content": "Book flights", "status": "pending"},
            {"content": "Book hotel", "status": "pending"},
        ]
        run.model.enqueue(
            reply_tools(
                ("p1", "write_todos", {"todos": todos}), ("r1", "get_weather", {"city": "Rome"})
            ),
            reply_text("Here is the plan."),
            reply_text("Executing."),
        )
        session = await run.client.start_session("Planner")
        await run.client.wait_for(session, lambda s: s.state is not None)
        from dex_agents.types import AgentUserMessage

        assert await run.client.send_user_message(
            session, AgentUserMessage(text="Plan a trip", plan_mode=True)
        )
        snapshot = await run.client.wait_for(session, turns_done(1))
        assert snapshot.plan is not None
        assert (snapshot.plan.revision, snapshot.plan.status) == (1, "draft")
        assert await run.client.execute_plan(session, 2) is False  # a stale revision
        assert await run.client.execute_plan(session, 1)
        assert await run.client.execute_plan(session, 1) is False  # already accepted
        snapshot = await run.client.wait_for(session, turns_done(2))

        assert snapshot.plan is not None and snapshot.plan.status == "active"
        seen = run.tool_outputs(1)
        assert json.loads(seen["p1"]) == {"status": "updated", "revision": 1, "task_count": 2}
        assert seen["r1"] == "The tool call was not run: a planning turn can only call write_todos."
        executing = run.requests[2].body["messages"]
        assert executing[-1]["content"] == (
            "[Dex] The user approved plan revision 1. Execute it and keep the task statuses "
            "current with write_todos."
        )
        assert executing[0]["content"].startswith("[Dex] The current plan, revision 1, is active:")
        assert [e["status"] for e in await events_of(run.client, session, "plan_updated")] == [
            "draft",
            "active",
        ]
        assert await events_of(run.client, session, "plan_execution_started") == [{"revision": 1}]
        assert snapshot.state is not None and snapshot.state.interaction_mode == "executing"

    async def test_compaction_summarizes_and_retention_deletes(self, run: SessionRun) -> None:
        run.model.enqueue(*(reply_text(f"answer {n}") for n in range(1, 8)))
        session = await run.client.start_session("Compacting", "question 1")
        for n in range(2, 8):
            await run.client.wait_for(session, turns_done(n - 1))
            assert await run.client.send_user_message(session, f"question {n}")
        snapshot = await run.client.wait_for(session, turns_done(7))

        summary = snapshot.context_summary
        assert summary is not None and summary.generation >= 1 and summary.first_sequence == 1
        history = await step_types(run.client, session)
        assert "CompactContext" in history
        finished = await events_of(run.client, session, "compaction_finished")
        assert finished[-1] == {
            "generation": summary.generation,
            "through_sequence": summary.last_sequence,
        }
        last_request = run.requests[-1].body["messages"]
        assert last_request[0]["content"].startswith("[Dex] Summary of the earlier conversation:")
        # The model input stays bounded: the summary plus the messages after it.
        assert len(last_request) <= 1 + 1 + 10
        page = await run.client.list_agent_messages(session, limit=200)
        assert page.deleted_before_sequence is not None and page.deleted_before_sequence > 1
        assert page.messages[0].sequence == page.deleted_before_sequence
        assert page.next_before_sequence is None

    async def test_a_running_turn_keeps_the_settings_it_started_with(self, run: SessionRun) -> None:
        from dex_agents.testing import ScriptedReply

        run.model.enqueue(
            ScriptedReply(
                tool_calls=reply_tools(("r1", "get_weather", {"city": "Rome"})).tool_calls,
                hang=True,
            ),
            reply_text("Sunny."),
            reply_text("Still sunny."),
        )
        session = await run.client.start_session(
            "Planner", "Weather?", session_settings={"tone": "dry"}
        )
        run.model.wait_for_requests(run.first_request + 1)
        assert await run.client.update_session_settings(session, {"tone": "warm"})
        run.model.release()
        await run.client.wait_for(session, turns_done(1))
        assert await run.client.send_user_message(session, "And tomorrow?")
        await run.client.wait_for(session, turns_done(2))

        def settings_seen(index: int) -> str:
            messages = run.requests[index].body["messages"]
            return next(m["content"] for m in messages if str(m["content"]).startswith("settings:"))

        assert settings_seen(0) == 'settings: {"tone": "dry"}'
        assert settings_seen(1) == 'settings: {"tone": "dry"}'  # same turn, after the tool call
        assert settings_seen(2) == 'settings: {"tone": "warm"}'  # the next turn
