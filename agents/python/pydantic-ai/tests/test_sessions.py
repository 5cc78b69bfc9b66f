"""Pydantic AI specifics through real Worker processes (the spec matrix is test_matrix.py):
structured output, ModelRetry and invalid arguments; the Step shape of each turn comes from the
Step history."""

from __future__ import annotations

import json
from collections.abc import Callable

from dex_agents import AgentClient
from dex_agents.testing import (
    ScriptedModelServer,
    ToolRunLog,
    WorkerProcess,
    events_of,
    reply_text,
    reply_tools,
    step_types,
    turns_done,
)

from .apps.agents import Ticket
from .helpers import tool_messages

MakeWorker = Callable[..., WorkerProcess]


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
