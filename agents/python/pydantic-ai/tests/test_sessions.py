"""Pydantic AI specifics through one shared real Worker (the spec matrix is test_matrix.py):
structured output, ModelRetry, invalid arguments, and an ApprovalRequiredToolset that decides
per call; the Step shape of each turn comes from the Step history."""

from __future__ import annotations

import json
from pathlib import Path

from dex_agents.testing import (
    events_of,
    pending_interrupt,
    reply_text,
    reply_tools,
    step_types,
    turns_done,
)
from dex_agents.testing.shared_worker import SessionRun, SharedWorkerSuite, WorkerApp

from .apps.agents import Ticket

ROOT = Path(__file__).parent.parent


class TestPydanticAiSessions(SharedWorkerSuite):
    app = WorkerApp(worker_target="tests.apps.triage:flows", worker_cwd=ROOT)

    async def test_structured_output_with_a_tool(self, run: SessionRun) -> None:
        run.model.enqueue(
            reply_tools(("k1", "known_categories", {})),
            reply_tools(("o1", "final_result", {"category": "billing", "priority": 2})),
        )
        session = await run.client.start_session("TicketAgent", "My invoice is wrong.")
        snapshot = await run.client.wait_for(session, turns_done(1))

        assert await step_types(run.client, session) == [
            "StartAgentSession",
            "RunModel",
            "CallTool",
            "ResumeTurn",
            "RunModel",
            "AwaitUserMessage",
        ]
        assert run.tool_outputs(1) == {"k1": '["billing","shipping"]'}
        answer = snapshot.messages[-2]
        assert (answer.role, answer.tool_name) == ("assistant", "final_result")
        assert Ticket.model_validate_json(answer.text or "") == Ticket(
            category="billing", priority=2
        )
        assert snapshot.messages[-1].role == "tool"
        assert "final_result" in {t["function"]["name"] for t in run.requests[0].body["tools"]}

    async def test_model_retry_from_a_tool_is_a_failure_the_model_sees(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(
            reply_tools(("l1", "lookup_order", {"order_id": "123"})),
            reply_tools(("l2", "lookup_order", {"order_id": "o-123"})),
            reply_text("Order o-123 has shipped."),
        )
        session = await run.client.start_session("TriageAgent", "Where is order 123?")
        await run.client.wait_for(session, turns_done(1))

        assert run.tool_outputs(1) == {"l1": "The tool call failed: order ids start with 'o-'"}
        assert json.loads(run.tool_outputs(2)["l2"]) == {"order_id": "o-123", "status": "shipped"}
        # A failure the model sees is final: the tool ran once per call, with the call's key.
        assert [e["key"] for e in run.tool_log.entries("lookup_order")] == [
            f"{session}/turn-1/l1",
            f"{session}/turn-1/l2",
        ]
        history = await run.client.get_step_history(session)
        assert [(s.step_type, s.attempts) for s in history if s.step_type == "CallTool"] == [
            ("CallTool", 1),
            ("CallTool", 1),
        ]
        finished = await events_of(run.client, session, "tool_call_finished")
        assert [f["status"] for f in finished] == ["failed", "succeeded"]

    async def test_invalid_arguments_make_another_model_call_in_the_same_turn(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(
            reply_tools(("bad", "get_weather", {"town": "Rome"})),
            reply_tools(("good", "get_weather", {"city": "Rome"})),
            reply_text("Sunny in Rome."),
        )
        session = await run.client.start_session("TriageAgent", "Weather in Rome?")
        snapshot = await run.client.wait_for(session, turns_done(1))

        assert await step_types(run.client, session) == [
            "StartAgentSession",
            "RunModel",
            "RunModel",
            "CallTool",
            "ResumeTurn",
            "RunModel",
            "AwaitUserMessage",
        ]
        assert "Field required" in run.tool_outputs(1)["bad"]
        assert run.tool_log.count("get_weather") == 1
        assert [(m.role, m.tool_call_id) for m in snapshot.messages] == [
            ("user", None),
            ("assistant", "bad"),
            ("tool", "bad"),
            ("assistant", "good"),
            ("tool", "good"),
            ("assistant", None),
        ]
        assert snapshot.usage.model_calls == 3

    async def test_a_tool_asking_approval_at_run_time_waits_for_it_under_its_policy(
        self, run: SessionRun
    ) -> None:
        """An ApprovalRequiredToolset decides per call; unclassified tools wait for approval by
        default, and the approved call runs with ctx.tool_call_approved."""
        run.model.enqueue(
            reply_tools(("big", "refund", {"order_id": "o-9", "amount": 500})),
            reply_text("Refunded."),
        )
        session = await run.client.start_session("TriageAgent", "Refund 500 on o-9.")
        await run.client.wait_for(session, pending_interrupt("big"))
        assert run.tool_log.count("refund") == 0
        assert await run.client.resolve_interrupt(session, "big", approved=True)
        await run.client.wait_for(session, turns_done(1))

        assert [e["order_id"] for e in run.tool_log.entries("refund")] == ["o-9"]
        assert run.tool_outputs(1) == {"big": "refunded 500 on o-9"}
