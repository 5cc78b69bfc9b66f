"""OpenAI Agents SDK specifics through one shared real Worker (the spec matrix is
test_matrix.py): a handoff, a tripped input guardrail and structured output."""

from __future__ import annotations

import json
from pathlib import Path

from dex_agents.testing import events_of, reply_text, reply_tools, step_types, turns_done
from dex_agents.testing.shared_worker import SessionRun, SharedWorkerSuite, WorkerApp, responses

ROOT = Path(__file__).parent.parent


class TestOpenAIAgentsSessions(SharedWorkerSuite):
    app = WorkerApp(worker_target="tests.apps.support:flows", worker_cwd=ROOT, model_view=responses)

    async def test_handoff_runs_in_one_model_step_and_the_next_agent_keeps_the_turn(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(
            reply_tools(("h1", "transfer_to_billing", {})),
            reply_tools(("r1", "refund", {"order_id": "o-42"})),
            reply_text("Your order o-42 is refunded."),
        )
        session = await run.client.start_session("SupportAgent", "Refund order o-42 please.")
        snapshot = await run.client.wait_for(session, turns_done(1))

        # The handoff makes the first RunModel two model calls; no Step runs the handoff.
        assert await step_types(run.client, session) == [
            "StartAgentSession",
            "RunModel",
            "CallTool",
            "ResumeTurn",
            "RunModel",
            "AwaitUserMessage",
        ]
        assert [r.body["instructions"] for r in run.requests] == [
            "You are a support agent.",
            "You handle refunds.",
            "You handle refunds.",
        ]
        assert await events_of(run.client, session, "openai_agents.handoff") == [
            {"from_agent": "Support", "to_agent": "Billing", "tool_call_id": "h1"}
        ]
        recorded = await events_of(run.client, session, "usage_recorded")
        assert [e["recorded"]["model_calls"] for e in recorded] == [2, 1]
        [refunded] = run.tool_log.entries("refund")
        assert (refunded["order_id"], refunded["key"]) == ("o-42", f"{session}/turn-1/r1")
        assert run.tool_outputs(2) == {
            "h1": json.dumps({"assistant": "Billing"}),
            "r1": "refunded o-42",
        }
        assert [m.tool_name for m in snapshot.messages if m.role == "tool"] == [
            "transfer_to_billing",
            "refund",
        ]
        assert snapshot.messages[-1].text == "Your order o-42 is refunded."

    async def test_a_tripped_input_guardrail_fails_the_turn(self, run: SessionRun) -> None:
        run.model.enqueue(reply_text("Hello again."))
        session = await run.client.start_session("SupportAgent", "My password is hunter2")
        snapshot = await run.client.wait_for(session, turns_done(1))
        assert snapshot.state is not None
        assert snapshot.state.last_turn_error == "input guardrail 'no_passwords' tripped"
        assert await run.client.send_user_message(session, "Hi")
        snapshot = await run.client.wait_for(session, turns_done(2))

        assert await step_types(run.client, session) == [
            "StartAgentSession",
            "RunModel",
            "AwaitUserMessage",
            "RunModel",
            "AwaitUserMessage",
        ]
        assert run.tool_log.count() == 0
        assert len(run.requests) == 1  # the blocking guardrail stopped the first turn's call
        assert await events_of(run.client, session, "turn_failed") == [
            {"error": "input guardrail 'no_passwords' tripped"}
        ]
        assert snapshot.state is not None and snapshot.state.last_turn_error is None
        assert [m.text for m in snapshot.messages] == [
            "My password is hunter2",
            "Hi",
            "Hello again.",
        ]

    async def test_structured_output_is_the_stored_answer(self, run: SessionRun) -> None:
        run.model.enqueue(reply_text('{"category": "billing", "priority": 2}'))
        session = await run.client.start_session("Classifier", "My invoice is wrong.")
        snapshot = await run.client.wait_for(session, turns_done(1))

        assert run.requests[0].body["text"]["format"]["type"] == "json_schema"
        assert json.loads(snapshot.messages[-1].text or "") == {
            "category": "billing",
            "priority": 2,
        }
