"""Stepwise through a real Worker process (one per backend, that the tests share): the Step shape
of a turn, approvals, replay."""

from __future__ import annotations

from pathlib import Path

from dex_agents.testing import ScriptedUsage, reply_text, reply_tools
from dex_agents.testing.shared_worker import SessionRun, SharedWorkerSuite, WorkerApp
from dex_agents.types import AgentUserMessage

from ..helpers import events_of, pending_interrupt, step_types, turns_done

APP = "tests.stepwise.app:flows"


class TestStepwiseOnOneWorker(SharedWorkerSuite):
    app = WorkerApp(worker_target=APP, worker_cwd=Path(__file__).parent.parent.parent)

    async def test_a_stepwise_turn_runs_each_call_in_its_own_step(self, run: SessionRun) -> None:
        run.model.enqueue(
            reply_tools(
                ("r1", "get_weather", {"city": "Lima"}),
                ("w1", "send_email", {"to": "ana@example.com", "body": "Hi"}),
            ),
            reply_text("Email sent; sunny in Lima.", usage=ScriptedUsage(40, 8, 30, 2)),
            reply_text("You asked about Lima."),
        )
        session = await run.client.start_session("Assistant", "Weather in Lima, then email Ana.")
        await run.client.wait_for(session, pending_interrupt("w1"))
        assert await run.client.resolve_interrupt(session, "w1", approved=True)
        await run.client.wait_for(session, turns_done(1))
        assert await run.client.send_user_message(session, "Which city?")
        snapshot = await run.client.wait_for(session, turns_done(2))

        steps = await step_types(run.client, session)
        assert steps[:2] == ["StartAgentSession", "RunModel"]
        assert sorted(steps[2:5]) == ["AwaitToolApproval", "CallTool", "ResumeTurn"]
        assert steps[5:] == [
            "CallSingleAttemptTool",
            "RunModel",
            "AwaitUserMessage",
            "RunModel",
            "AwaitUserMessage",
        ]
        assert (run.tool_log.count("get_weather"), run.tool_log.count("send_email")) == (1, 1)
        assert run.tool_outputs(1) == {
            "r1": '{"city":"Lima","forecast":"sunny"}',
            "w1": "sent to ana@example.com",
        }
        roles = [m["role"] for m in run.requests[2].body["messages"]]
        assert roles == ["system", "user", "assistant", "tool", "tool", "assistant", "user"]
        assert [(m.role, m.tool_call_id) for m in snapshot.messages] == [
            ("user", None),
            ("assistant", None),
            ("tool", "r1"),
            ("tool", "w1"),
            ("assistant", None),
            ("user", None),
            ("assistant", None),
        ]
        deltas = await events_of(run.client, session, "text_delta")
        assert "".join(d["text"] for d in deltas).startswith("Email sent; sunny in Lima.")
        usage = await events_of(run.client, session, "usage_recorded")
        assert usage[1]["recorded"] == {
            "model_calls": 1,
            "input_tokens": 40,
            "output_tokens": 8,
            "cached_input_tokens": 30,
            "reasoning_tokens": 2,
        }
        offered = [t["function"]["name"] for t in run.requests[0].body["tools"]]
        assert offered == ["get_weather", "send_email"]

    async def test_plan_mode_and_ask_user_on_stepwise(self, run: SessionRun) -> None:
        todos = {"todos": [{"content": "Check the weather", "status": "pending"}]}
        run.model.enqueue(
            reply_tools(("p1", "write_todos", todos)),
            reply_text("Here is the plan."),
            reply_tools(("q1", "ask_user", {"question": "Which city?", "choices": None})),
            reply_text("Rome is sunny."),
        )
        session = await run.client.start_session("Planner")
        await run.client.wait_for(session, lambda s: s.state is not None)
        message = AgentUserMessage(text="Plan my day", plan_mode=True)
        assert await run.client.send_user_message(session, message)
        snapshot = await run.client.wait_for(session, turns_done(1))
        assert snapshot.plan is not None and snapshot.plan.status == "draft"
        assert await run.client.execute_plan(session, 1)
        await run.client.wait_for(session, pending_interrupt("q1"))
        assert await run.client.answer_question(session, "q1", "Rome")
        snapshot = await run.client.wait_for(session, turns_done(2))

        planning = run.requests[0].body
        assert planning["tool_choice"] == {"type": "function", "function": {"name": "write_todos"}}
        assert [t["function"]["name"] for t in planning["tools"]] == ["write_todos"]
        assert planning["messages"][1]["content"].startswith("[Dex] There is no plan yet.")
        assert "tool_choice" not in run.requests[1].body
        executing = run.requests[2].body
        assert "tool_choice" not in executing
        assert [t["function"]["name"] for t in executing["tools"]] == [
            "get_weather",
            "ask_user",
            "durable_wait",
            "write_todos",
        ]
        assert executing["messages"][-2]["content"] == (
            "[Dex] The current plan, revision 1, is active:\n- [pending] Check the weather"
        )
        assert run.tool_outputs(3)["q1"] == '{"status":"answered","answer":"Rome"}'

    async def test_compaction_summarizes_with_one_model_call(self, run: SessionRun) -> None:
        # Every reply is the same, so summaries and answers may come in any order.
        run.model.enqueue(*(reply_text("word " * 80) for _ in range(12)))
        session = await run.client.start_session("Compacting", "question 1")
        for n in range(2, 6):
            await run.client.wait_for(session, turns_done(n - 1))
            assert await run.client.send_user_message(session, f"question {n}")
        snapshot = await run.client.wait_for(session, turns_done(5))

        assert snapshot.context_summary is not None
        assert "CompactContext" in await step_types(run.client, session)
        summaries = [
            r.body for r in run.requests if "Summarize the conversation" in str(r.body["messages"])
        ]
        assert summaries and "tools" not in summaries[0]
        last = run.requests[-1].body["messages"]
        assert last[1]["content"].startswith("[Dex] Summary of the earlier conversation:\n")
