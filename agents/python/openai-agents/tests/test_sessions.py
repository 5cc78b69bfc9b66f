"""Spec matrix 1, 2, 10 and 11, a handoff, a tripped input guardrail and structured output,
through real Worker processes."""

from __future__ import annotations

import json

from dex_agents.testing import ScriptedReply, reply_text, reply_tools

from .helpers import events_of, model_input, step_types, tool_outputs, turns_done


async def test_read_tool_turn_has_the_step_shape_and_replays_next_turn(
    make_worker, model, client, tool_log
):
    model.enqueue(
        reply_tools(("call_1", "get_weather", {"city": "Paris"})),
        reply_text("It is sunny in Paris."),
        reply_text("You asked about Paris."),
    )
    with make_worker():
        session = await client.start_session("SupportAgent", "What's the weather in Paris?")
        await client.wait_for(session, turns_done(1))
        assert await client.send_user_message(session, "Which city did I ask about?")
        await client.wait_for(session, turns_done(2))

    assert await step_types(client, session) == [
        "StartAgentSession",
        "RunModel",
        "CallTool",
        "ResumeTurn",
        "RunModel",
        "AwaitUserMessage",
        "RunModel",
        "AwaitUserMessage",
    ]
    assert [e["user"] for e in tool_log.entries("get_weather")] == ["ada"]
    assert json.loads(tool_outputs(model, 1)["call_1"]) == {"city": "Paris", "forecast": "sunny"}
    assert all(r.path == "/v1/responses" for r in model.requests)
    # The next turn replays the stored items to the SDK, which sends them as they are.
    replayed = model_input(model, 2)
    assert [(i.get("type"), i.get("role")) for i in replayed] == [
        (None, "user"),
        ("function_call", None),
        ("function_call_output", None),
        ("message", "assistant"),
        (None, "user"),
    ]
    assert replayed[0]["content"] == "What's the weather in Paris?"
    assert replayed[1]["call_id"] == replayed[2]["call_id"] == "call_1"
    assert replayed[3]["content"][0]["text"] == "It is sunny in Paris."
    assert replayed[4]["content"] == "Which city did I ask about?"
    assert await events_of(client, session, "turn_completed") == [
        {"message_count": 3},
        {"message_count": 1},
    ]


async def test_parallel_tool_calls_run_as_parallel_steps(make_worker, model, client, tool_log):
    model.enqueue(
        reply_tools(("a", "slow_read", {"seconds": 1.0}), ("b", "slow_read", {"seconds": 1.0})),
        reply_text("Both done."),
    )
    with make_worker():
        session = await client.start_session("SupportAgent", "Do two slow reads.")
        await client.wait_for(session, turns_done(1))

    assert await step_types(client, session) == [
        "StartAgentSession",
        "RunModel",
        "CallTool",
        "CallTool",
        "ResumeTurn",
        "RunModel",
        "AwaitUserMessage",
    ]
    # Both calls started before either finished: they ran at the same time.
    assert [e["phase"] for e in tool_log.entries("slow_read")] == [
        "started",
        "started",
        "finished",
        "finished",
    ]
    assert tool_outputs(model, 1) == {"a": "read done", "b": "read done"}
    assert len(model.requests) == 2


async def test_message_sent_during_a_turn_is_queued_and_handled_after(make_worker, model, client):
    model.enqueue(ScriptedReply(text="First answer.", hang=True), reply_text("Second answer."))
    with make_worker():
        session = await client.start_session("SupportAgent", "First question")
        model.wait_for_requests(1)
        assert await client.send_user_message(session, "Second question")
        snapshot = await client.get_agent_snapshot(session)
        assert snapshot.state is not None and snapshot.state.status == "running_model"
        assert snapshot.queued_message_count == 1
        model.release()
        snapshot = await client.wait_for(session, turns_done(2))

    assert [m.text for m in snapshot.messages] == [
        "First question",
        "First answer.",
        "Second question",
        "Second answer.",
    ]
    assert snapshot.queued_message_count == 0
    assert len(model_input(model, 1)) == 3


async def test_snapshot_returns_the_conversation_after_a_turn(make_worker, model, client):
    model.enqueue(reply_tools(("w1", "get_weather", {"city": "Oslo"})), reply_text("Cold."))
    with make_worker():
        session = await client.start_session("SupportAgent", "Weather in Oslo?")
        snapshot = await client.wait_for(session, turns_done(1))

    assert snapshot.state is not None and snapshot.state.turn_count == 1
    assert [(m.sequence, m.role, m.turn_id) for m in snapshot.messages] == [
        (1, "user", "turn-1"),
        (2, "assistant", "turn-1"),
        (3, "tool", "turn-1"),
        (4, "assistant", "turn-1"),
    ]
    call, result, answer = snapshot.messages[1:]
    assert (call.tool_call_id, call.tool_name) == ("w1", "get_weather")
    assert json.loads(call.tool_arguments or "") == {"city": "Oslo"}
    assert (result.tool_call_id, result.tool_name) == ("w1", "get_weather")
    assert json.loads(result.tool_output or "") == {"city": "Oslo", "forecast": "sunny"}
    assert answer.text == "Cold."
    assert json.loads(answer.framework_item)["type"] == "message"
    assert snapshot.tool_calls == []
    assert snapshot.usage.model_calls == 2
    assert (snapshot.usage.input_tokens, snapshot.usage.output_tokens) == (20, 10)
    deltas = await events_of(client, session, "text_delta")
    assert "".join(d["text"] for d in deltas) == "Cold."


async def test_handoff_runs_in_one_model_step_and_the_next_agent_keeps_the_turn(
    make_worker, model, client, tool_log
):
    model.enqueue(
        reply_tools(("h1", "transfer_to_billing", {})),
        reply_tools(("r1", "refund", {"order_id": "o-42"})),
        reply_text("Your order o-42 is refunded."),
    )
    with make_worker():
        session = await client.start_session("SupportAgent", "Refund order o-42 please.")
        snapshot = await client.wait_for(session, turns_done(1))

    # The handoff makes the first RunModel two model calls; no Step runs the handoff.
    assert await step_types(client, session) == [
        "StartAgentSession",
        "RunModel",
        "CallTool",
        "ResumeTurn",
        "RunModel",
        "AwaitUserMessage",
    ]
    assert [r.body["instructions"] for r in model.requests] == [
        "You are a support agent.",
        "You handle refunds.",
        "You handle refunds.",
    ]
    assert await events_of(client, session, "openai_agents.handoff") == [
        {"from_agent": "Support", "to_agent": "Billing", "tool_call_id": "h1"}
    ]
    recorded = await events_of(client, session, "usage_recorded")
    assert [e["recorded"]["model_calls"] for e in recorded] == [2, 1]
    [refunded] = tool_log.entries("refund")
    assert (refunded["order_id"], refunded["key"]) == ("o-42", f"{session}/turn-1/r1")
    assert tool_outputs(model, 2) == {
        "h1": json.dumps({"assistant": "Billing"}),
        "r1": "refunded o-42",
    }
    assert [m.tool_name for m in snapshot.messages if m.role == "tool"] == [
        "transfer_to_billing",
        "refund",
    ]
    assert snapshot.messages[-1].text == "Your order o-42 is refunded."


async def test_a_tripped_input_guardrail_fails_the_turn(make_worker, model, client, tool_log):
    model.enqueue(reply_text("Hello again."))
    with make_worker():
        session = await client.start_session("SupportAgent", "My password is hunter2")
        snapshot = await client.wait_for(session, turns_done(1))
        assert snapshot.state is not None
        assert snapshot.state.last_turn_error == "input guardrail 'no_passwords' tripped"
        assert await client.send_user_message(session, "Hi")
        snapshot = await client.wait_for(session, turns_done(2))

    assert await step_types(client, session) == [
        "StartAgentSession",
        "RunModel",
        "AwaitUserMessage",
        "RunModel",
        "AwaitUserMessage",
    ]
    assert tool_log.count() == 0
    assert len(model.requests) == 1  # the blocking guardrail stopped the first turn's call
    assert await events_of(client, session, "turn_failed") == [
        {"error": "input guardrail 'no_passwords' tripped"}
    ]
    assert snapshot.state is not None and snapshot.state.last_turn_error is None
    assert [m.text for m in snapshot.messages] == ["My password is hunter2", "Hi", "Hello again."]


async def test_structured_output_is_the_stored_answer(make_worker, model, client):
    model.enqueue(reply_text('{"category": "billing", "priority": 2}'))
    with make_worker():
        session = await client.start_session("Classifier", "My invoice is wrong.")
        snapshot = await client.wait_for(session, turns_done(1))

    assert model.requests[0].body["text"]["format"]["type"] == "json_schema"
    assert json.loads(snapshot.messages[-1].text or "") == {"category": "billing", "priority": 2}
