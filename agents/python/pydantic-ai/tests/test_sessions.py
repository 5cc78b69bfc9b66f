"""Spec matrix 1, 2, 10 and 11 through real Worker processes, plus structured output, deps,
ModelRetry and invalid arguments: the Step shape of each turn comes from the Step history."""

from __future__ import annotations

import json
from collections.abc import Callable

from dex_agents import AgentClient
from dex_agents.testing import (
    ScriptedModelServer,
    ScriptedReply,
    ToolRunLog,
    WorkerProcess,
    reply_text,
    reply_tools,
)

from .apps.agents import Ticket
from .helpers import events_of, sent, step_types, tool_messages, turns_done

MakeWorker = Callable[..., WorkerProcess]


async def test_read_tool_turn_has_the_step_shape_and_replays_next_turn(
    make_worker: MakeWorker, model: ScriptedModelServer, client: AgentClient, tool_log: ToolRunLog
) -> None:
    model.enqueue(
        reply_tools(("call_1", "get_weather", {"city": "Paris"})),
        reply_text("It is sunny in Paris."),
        reply_text("You asked about Paris."),
    )
    with make_worker():
        session = await client.start_session("TriageAgent", "What's the weather in Paris?")
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
    (run,) = tool_log.entries("get_weather")
    # The tool got the deps the application's factory built for this session.
    assert (run["city"], run["tool_call_id"], run["flow_id"]) == ("Paris", "call_1", session)
    assert tool_messages(model, 1) == {"call_1": "Sunny in Paris"}
    system = [m["content"] for m in model.requests[2].body["messages"] if m["role"] == "system"]
    assert system == ["You triage support requests.", "The user is Ada.", "Answer briefly."]
    replayed = sent(model, 2)
    assert [m["role"] for m in replayed] == ["user", "assistant", "tool", "assistant", "user"]
    assert replayed[1]["tool_calls"][0]["id"] == "call_1"
    assert [m["content"] for m in replayed[2:]] == [
        "Sunny in Paris",
        "It is sunny in Paris.",
        "Which city did I ask about?",
    ]
    assert await events_of(client, session, "turn_completed") == [
        {"message_count": 3},
        {"message_count": 1},
    ]


async def test_parallel_tool_calls_run_as_parallel_steps(
    make_worker: MakeWorker, model: ScriptedModelServer, client: AgentClient, tool_log: ToolRunLog
) -> None:
    model.enqueue(
        reply_tools(
            ("a", "get_weather", {"city": "Lima"}), ("b", "get_weather", {"city": "Quito"})
        ),
        reply_text("Both sunny."),
    )
    with make_worker(WEATHER_SECONDS="1"):
        session = await client.start_session("TriageAgent", "Weather in Lima and Quito?")
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
    order = [e["tool"] for e in tool_log.entries() if e["tool"].startswith("get_weather")]
    # Both calls started before either finished: they ran at the same time.
    assert order == ["get_weather", "get_weather", "get_weather:finished", "get_weather:finished"]
    assert tool_messages(model, 1) == {"a": "Sunny in Lima", "b": "Sunny in Quito"}
    (assistant,) = [m for m in sent(model, 1) if m["role"] == "assistant"]
    assert [call["id"] for call in assistant["tool_calls"]] == ["a", "b"]


async def test_message_sent_during_a_turn_is_queued_and_handled_after(
    make_worker: MakeWorker, model: ScriptedModelServer, client: AgentClient
) -> None:
    model.enqueue(ScriptedReply(text="First answer.", hang=True), reply_text("Second answer."))
    with make_worker():
        session = await client.start_session("TriageAgent", "First question")
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
    assert [m["content"] for m in sent(model, 1)] == [
        "First question",
        "First answer.",
        "Second question",
    ]


async def test_snapshot_returns_the_conversation_after_a_turn(
    make_worker: MakeWorker, model: ScriptedModelServer, client: AgentClient
) -> None:
    model.enqueue(
        reply_tools(("w1", "get_weather", {"city": "Oslo"}), text="Let me check."),
        reply_text("Cold."),
    )
    with make_worker():
        session = await client.start_session("TriageAgent", "Weather in Oslo?")
        snapshot = await client.wait_for(session, turns_done(1))

    assert snapshot.state is not None
    assert (snapshot.state.turn_count, snapshot.state.active_turn_id) == (1, None)
    assert [
        (m.sequence, m.role, m.text, m.tool_call_id, m.tool_name, m.tool_arguments, m.tool_output)
        for m in snapshot.messages
    ] == [
        (1, "user", "Weather in Oslo?", None, None, None, None),
        (2, "assistant", "Let me check.", None, None, None, None),
        (3, "assistant", None, "w1", "get_weather", '{"city":"Oslo"}', None),
        (4, "tool", None, "w1", "get_weather", None, "Sunny in Oslo"),
        (5, "assistant", "Cold.", None, None, None, None),
    ]
    assert snapshot.tool_calls == [] and snapshot.pending_interrupts == []
    assert snapshot.usage.model_calls == 2
    assert (snapshot.usage.input_tokens, snapshot.usage.output_tokens) == (20, 10)
    page = await client.list_agent_messages(session, limit=2)
    assert [m.sequence for m in page.messages] == [4, 5]
    deltas = await events_of(client, session, "text_delta")
    assert "".join(d["text"] for d in deltas) == "Let me check.Cold."


async def test_structured_output_with_a_tool(
    make_worker: MakeWorker, model: ScriptedModelServer, client: AgentClient, tool_log: ToolRunLog
) -> None:
    model.enqueue(
        reply_tools(("k1", "known_categories", {})),
        reply_tools(("o1", "final_result", {"category": "billing", "priority": 2})),
    )
    with make_worker():
        session = await client.start_session("TicketAgent", "My invoice is wrong.")
        snapshot = await client.wait_for(session, turns_done(1))

    assert await step_types(client, session) == [
        "StartAgentSession",
        "RunModel",
        "CallTool",
        "ResumeTurn",
        "RunModel",
        "AwaitUserMessage",
    ]
    assert tool_messages(model, 1) == {"k1": '["billing","shipping"]'}
    answer = snapshot.messages[-2]
    assert (answer.role, answer.tool_name) == ("assistant", "final_result")
    assert Ticket.model_validate_json(answer.text or "") == Ticket(category="billing", priority=2)
    assert snapshot.messages[-1].role == "tool"
    assert "final_result" in {t["function"]["name"] for t in model.requests[0].body["tools"]}


async def test_model_retry_from_a_tool_is_a_failure_the_model_sees(
    make_worker: MakeWorker, model: ScriptedModelServer, client: AgentClient, tool_log: ToolRunLog
) -> None:
    model.enqueue(
        reply_tools(("l1", "lookup_order", {"order_id": "123"})),
        reply_tools(("l2", "lookup_order", {"order_id": "o-123"})),
        reply_text("Order o-123 has shipped."),
    )
    with make_worker():
        session = await client.start_session("TriageAgent", "Where is order 123?")
        await client.wait_for(session, turns_done(1))

    assert tool_messages(model, 1) == {"l1": "The tool call failed: order ids start with 'o-'"}
    assert json.loads(tool_messages(model, 2)["l2"]) == {"order_id": "o-123", "status": "shipped"}
    # A failure the model sees is final: the tool ran once per call, with the call's key.
    assert [e["key"] for e in tool_log.entries("lookup_order")] == [
        f"{session}/turn-1/l1",
        f"{session}/turn-1/l2",
    ]
    history = await client.get_step_history(session)
    assert [(s.step_type, s.attempts) for s in history if s.step_type == "CallTool"] == [
        ("CallTool", 1),
        ("CallTool", 1),
    ]
    finished = await events_of(client, session, "tool_call_finished")
    assert [f["status"] for f in finished] == ["failed", "succeeded"]


async def test_invalid_arguments_make_another_model_call_in_the_same_turn(
    make_worker: MakeWorker, model: ScriptedModelServer, client: AgentClient, tool_log: ToolRunLog
) -> None:
    model.enqueue(
        reply_tools(("bad", "get_weather", {"town": "Rome"})),
        reply_tools(("good", "get_weather", {"city": "Rome"})),
        reply_text("Sunny in Rome."),
    )
    with make_worker():
        session = await client.start_session("TriageAgent", "Weather in Rome?")
        snapshot = await client.wait_for(session, turns_done(1))

    assert await step_types(client, session) == [
        "StartAgentSession",
        "RunModel",
        "RunModel",
        "CallTool",
        "ResumeTurn",
        "RunModel",
        "AwaitUserMessage",
    ]
    assert "Field required" in tool_messages(model, 1)["bad"]
    assert tool_log.count("get_weather") == 1
    assert [(m.role, m.tool_call_id) for m in snapshot.messages] == [
        ("user", None),
        ("assistant", "bad"),
        ("tool", "bad"),
        ("assistant", "good"),
        ("tool", "good"),
        ("assistant", None),
    ]
    assert snapshot.usage.model_calls == 3
