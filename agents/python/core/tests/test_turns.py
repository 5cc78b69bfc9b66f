"""Spec matrix 1, 2, 10 and 11: the Step shape of a turn, parallel tools, queued messages,
and the snapshot, through one real Worker process per backend that the tests share."""

from __future__ import annotations

import json
from pathlib import Path

from dex_agents.testing import ScriptedReply, reply_text, reply_tools
from dex_agents.testing.shared_worker import SessionRun, SharedWorkerSuite, WorkerApp

from .helpers import events_of, step_types, turns_done


class TestTurns(SharedWorkerSuite):
    app = WorkerApp(worker_target="tests.apps.basic:flows", worker_cwd=Path(__file__).parent.parent)

    async def test_read_tool_turn_has_the_step_shape_and_replays_next_turn(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(
            reply_tools(("call_1", "get_weather", {"city": "Paris"})),
            reply_text("It is sunny in Paris."),
            reply_text("You asked about Paris."),
        )
        session = await run.client.start_session("Assistant", "What's the weather in Paris?")
        await run.client.wait_for(session, turns_done(1))
        assert await run.client.send_user_message(session, "Which city did I ask about?")
        await run.client.wait_for(session, turns_done(2))

        assert await step_types(run.client, session) == [
            "StartAgentSession",
            "RunModel",
            "CallTool",
            "ResumeTurn",
            "RunModel",
            "AwaitUserMessage",
            "RunModel",
            "AwaitUserMessage",
        ]
        assert run.tool_log.count("get_weather") == 1
        assert json.loads(run.tool_outputs(1)["call_1"]) == {"city": "Paris", "forecast": "sunny"}
        # The next turn replays the stored history to the model, in order.
        replayed = [(m["role"], m.get("content")) for m in run.requests[2].body["messages"]]
        assert replayed[0] == ("system", "You are a helpful assistant.")
        assert replayed[1] == ("user", "What's the weather in Paris?")
        assert replayed[2][0] == "assistant"
        assert replayed[3][0] == "tool"
        assert replayed[4:] == [
            ("assistant", "It is sunny in Paris."),
            ("user", "Which city did I ask about?"),
        ]
        completed = await events_of(run.client, session, "turn_completed")
        assert completed == [{"message_count": 3}, {"message_count": 1}]

    async def test_parallel_tool_calls_run_as_parallel_steps(self, run: SessionRun) -> None:
        run.model.enqueue(
            reply_tools(("a", "slow_read", {"seconds": 1.0}), ("b", "slow_read", {"seconds": 1.0})),
            reply_text("Both done."),
        )
        session = await run.client.start_session("Assistant", "Do two slow reads.")
        await run.client.wait_for(session, turns_done(1))

        history = await run.client.get_step_history(session)
        assert [s.step_type for s in history] == [
            "StartAgentSession",
            "RunModel",
            "CallTool",
            "CallTool",
            "ResumeTurn",
            "RunModel",
            "AwaitUserMessage",
        ]
        phases = [entry["phase"] for entry in run.tool_log.entries("slow_read")]
        # Both calls started before either finished: they ran at the same time.
        assert phases == ["started", "started", "finished", "finished"]
        assert set(run.tool_outputs(1)) == {"a", "b"}

    async def test_message_sent_during_a_turn_is_queued_and_handled_after(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(
            ScriptedReply(text="First answer.", hang=True), reply_text("Second answer.")
        )
        session = await run.client.start_session("Assistant", "First question")
        run.model.wait_for_requests(run.first_request + 1)
        assert await run.client.send_user_message(session, "Second question")
        snapshot = await run.client.get_agent_snapshot(session)
        assert snapshot.state is not None and snapshot.state.status == "running_model"
        assert snapshot.queued_message_count == 1
        assert snapshot.queued_messages[0].message.text == "Second question"
        run.model.release()
        snapshot = await run.client.wait_for(session, turns_done(2))

        assert [m.text for m in snapshot.messages] == [
            "First question",
            "First answer.",
            "Second question",
            "Second answer.",
        ]
        assert snapshot.queued_message_count == 0
        last = run.requests[1].body["messages"]
        assert [m["content"] for m in last[1:]] == [
            "First question",
            "First answer.",
            "Second question",
        ]

    async def test_snapshot_returns_the_conversation_after_a_turn(self, run: SessionRun) -> None:
        run.model.enqueue(reply_tools(("w1", "get_weather", {"city": "Oslo"})), reply_text("Cold."))
        session = await run.client.start_session("Assistant", "Weather in Oslo?")
        snapshot = await run.client.wait_for(session, turns_done(1))

        assert snapshot.state is not None
        assert snapshot.state.turn_count == 1
        assert snapshot.state.active_turn_id is None
        assert snapshot.state.next_message_sequence == 5
        assert [(m.sequence, m.role, m.turn_id) for m in snapshot.messages] == [
            (1, "user", "turn-1"),
            (2, "assistant", "turn-1"),
            (3, "tool", "turn-1"),
            (4, "assistant", "turn-1"),
        ]
        assert snapshot.messages[2].tool_call_id == "w1"
        assert snapshot.messages[2].tool_name == "get_weather"
        assert snapshot.messages[3].text == "Cold."
        assert snapshot.tool_calls == []  # records are deleted when the turn ends
        assert snapshot.pending_interrupts == []
        assert snapshot.usage.model_calls == 2
        assert snapshot.usage.input_tokens == 20 and snapshot.usage.output_tokens == 10

        page = await run.client.list_agent_messages(session, limit=2)
        assert [m.sequence for m in page.messages] == [3, 4]
        assert page.next_before_sequence == 3
        older = await run.client.list_agent_messages(session, before_sequence=3, limit=2)
        assert [m.sequence for m in older.messages] == [1, 2]
        assert older.next_before_sequence is None

    async def test_events_carry_turn_step_and_attempt(self, run: SessionRun) -> None:
        run.model.enqueue(
            reply_tools(("w1", "get_weather", {"city": "Rome"})), reply_text("Warm and sunny.")
        )
        session = await run.client.start_session("Assistant", "Rome?")
        await run.client.wait_for(session, turns_done(1))

        events = await run.client.read_events(session)
        types = [e.type for e in events]
        assert types[0] == "turn_started"
        assert types[-1] == "turn_completed"
        for expected in (
            "tool_call_deferred",
            "tool_call_started",
            "tool_call_finished",
            "usage_recorded",
            "text_delta",
        ):
            assert expected in types
        assert all(e.turn_id == "turn-1" for e in events)
        assert [e.offset for e in events] == list(range(1, len(events) + 1))
        deltas = [e for e in events if e.type == "text_delta"]
        assert "".join(json.loads(e.payload)["text"] for e in deltas) == "Warm and sunny."
        assert {e.step_execution_id for e in deltas} == {"RunModel-5"}
        finished = json.loads(next(e.payload for e in events if e.type == "tool_call_finished"))
        assert finished == {"tool_call_id": "w1", "tool_name": "get_weather", "status": "succeeded"}
        # A reader resumes after any offset.
        tail = await run.client.read_events(session, after=events[-3].offset)
        assert [e.offset for e in tail] == [e.offset for e in events[-2:]]
