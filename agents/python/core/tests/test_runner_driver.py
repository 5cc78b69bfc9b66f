"""RunnerDriver drives a real runner (ScriptedRunner, over HTTP to the scripted server) the way
the session Flow does: stored messages, settled tool call records, what the model sees."""

from __future__ import annotations

import pytest

from dex_agents import texts
from dex_agents.runner import ToolExecutionError, ToolPolicy
from dex_agents.testing import (
    Reject,
    RunnerDriver,
    ScriptedModelServer,
    ScriptedRunner,
    current_tool_execution,
    reply_text,
    reply_tools,
)
from dex_agents.testing.matrix import chat_completions
from dex_agents.types import AgentToolCall

keys: list[str] = []


def add(x: int, y: int) -> str:
    keys.append(current_tool_execution().idempotency_key)
    return str(x + y)


def send(to: str) -> str:
    raise AssertionError("a rejected or cut-off call never runs")


def lookup(order_id: str) -> str:
    raise ToolExecutionError(f"no order {order_id}")


@pytest.fixture
def driver(model: ScriptedModelServer) -> RunnerDriver:
    keys.clear()
    runner = ScriptedRunner([add, send, lookup], base_url=model.base_url)
    return RunnerDriver(runner, tool_policies={"add": ToolPolicy(effect="read")})


def decide(record: AgentToolCall) -> Reject | str:
    return {"send": Reject("Not to Ana."), "lookup": "run"}.get(record.tool_name, "run")


async def test_a_turn_settles_each_call_and_the_model_sees_every_result(
    driver: RunnerDriver, model: ScriptedModelServer
) -> None:
    model.enqueue(
        reply_tools(("a", "add", {"x": 1, "y": 2}), ("s", "send", {"to": "ana"})),
        reply_tools(("l", "lookup", {"order_id": "o-1"})),
        reply_text("3; not sent; no order."),
    )

    result = await driver.turn("Add, send, look up.", decide=decide)

    assert [(r.tool_call_id, r.effect, r.status, r.deferral_order) for r in result.records] == [
        ("a", "read", "succeeded", 0),
        ("s", "unclassified", "rejected", 1),
        ("l", "unclassified", "failed", 2),
    ]
    assert keys == ["session-1/turn-1/a"]
    assert chat_completions.tool_outputs(model.requests[1]) == {"a": "3", "s": "Not to Ana."}
    assert chat_completions.tool_outputs(model.requests[2])["l"] == (
        texts.TOOL_CALL_FAILED_PREFIX + "no order o-1"
    )
    assert result.final.new_messages[-1].text == "3; not sent; no order."
    assert [type(o).__name__ for o in result.outcomes] == [
        "ToolCallsRequested",
        "ToolCallsRequested",
        "TurnCompleted",
    ]
    assert driver.messages[0].text == "Add, send, look up."
    assert result.new_messages == driver.messages[1:]
    assert driver.usage.model_calls == 3
    assert driver.events.texts() == "3; not sent; no order."


async def test_the_next_turn_replays_the_stored_messages(
    driver: RunnerDriver, model: ScriptedModelServer
) -> None:
    model.enqueue(
        reply_tools(("s", "send", {"to": "ana"})),
        reply_text("Maybe sent."),
        reply_text("You asked me to email Ana."),
    )

    await driver.turn("Email Ana.", decide=lambda record: "outcome_unknown")
    second = await driver.turn("What did I ask?", decide=lambda record: "reject")

    assert chat_completions.tool_outputs(model.requests[1]) == {"s": texts.OUTCOME_UNKNOWN_TEXT}
    assert chat_completions.user_texts(model.requests[2]) == ["Email Ana.", "What did I ask?"]
    assert chat_completions.tool_outputs(model.requests[2]) == {"s": texts.OUTCOME_UNKNOWN_TEXT}
    assert second.records == [] and [m.turn_id for m in second.new_messages] == ["turn-2"]
    assert [m.sequence for m in driver.messages] == list(range(1, len(driver.messages) + 1))


async def test_a_turn_without_an_answer_stops_at_max_model_calls(
    driver: RunnerDriver, model: ScriptedModelServer
) -> None:
    model.enqueue(*[reply_tools((f"a{i}", "add", {"x": i, "y": 0})) for i in range(3)])

    with pytest.raises(AssertionError, match="3 model steps without an answer"):
        await driver.turn("Loop.", max_model_calls=3)
    assert len(model.requests) == 3
