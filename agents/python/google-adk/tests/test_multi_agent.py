"""Multi-agent trees in the runner harness: a real ADK tree on LiteLlm against the scripted
Chat Completions server, driven in memory as the session Flow drives a runner."""

from __future__ import annotations

import json
from typing import Any

import pytest
from dex_agents.runner import ToolCallsRequested, TurnCompleted, TurnContinued
from dex_agents.testing import RunnerDriver, ScriptedModelServer, reply_text, reply_tools
from google.adk.agents import LlmAgent, LoopAgent, ParallelAgent, SequentialAgent
from google.adk.models.lite_llm import LiteLlm
from google.adk.tools.tool_context import ToolContext

from dex_agents_google_adk import AdkRunner, UnsupportedAgentError


def llm(server: ScriptedModelServer) -> LiteLlm:
    return LiteLlm(model="openai/gpt-test", api_base=server.base_url, api_key="test")


def lookup_order(order_id: str) -> str:
    """Look up an order."""
    return f"order {order_id}: paid"


def refund(order_id: str) -> str:
    """Refund an order."""
    return f"refunded {order_id}"


def triage(server: ScriptedModelServer) -> LlmAgent:
    billing = LlmAgent(
        name="billing",
        description="Handles refunds.",
        model=llm(server),
        instruction="You refund orders.",
        tools=[refund],
    )
    return LlmAgent(
        name="triage",
        model=llm(server),
        instruction="Route the customer.",
        tools=[lookup_order],
        sub_agents=[billing],
    )


async def test_a_transfer_ends_the_step_and_the_next_one_is_the_target_agents(
    model: ScriptedModelServer,
) -> None:
    driver = RunnerDriver(AdkRunner(triage(model)), default_tool_effect="read")
    model.enqueue(
        reply_tools(("t1", "transfer_to_agent", {"agent_name": "billing"})),
        reply_tools(("r1", "refund", {"order_id": "o-1"})),
        reply_text("Refunded."),
    )
    result = await driver.turn("Refund o-1")

    assert [type(o) for o in result.outcomes] == [
        TurnContinued,
        ToolCallsRequested,
        TurnCompleted,
    ]
    # One model call per Step: triage's, then billing's two, each with billing's own tools.
    assert [tool_names(r.body) for r in model.requests] == [
        ["transfer_to_agent", "lookup_order"],
        ["transfer_to_agent", "refund"],
        ["transfer_to_agent", "refund"],
    ]
    assert [instruction(r.body) for r in model.requests] == [
        "Route the customer.",
        "You refund orders.",
        "You refund orders.",
    ]
    assert driver.events.of_type("google_adk.transfer") == [
        {"from_agent": "triage", "to_agent": "billing", "tool_call_id": "t1"}
    ]
    assert [(m.role, m.tool_name, m.text) for m in result.new_messages] == [
        ("assistant", "transfer_to_agent", None),
        ("tool", "transfer_to_agent", None),
        ("assistant", "refund", None),
        ("tool", "refund", None),
        ("assistant", None, "Refunded."),
    ]
    # The next turn goes on with billing, the agent that answered (ADK's own choice).
    model.enqueue(reply_text("Anything else?"))
    await driver.turn("Thanks")
    assert instruction(model.requests[-1].body) == "You refund orders."


def hand_over(order_id: str, tool_context: ToolContext) -> str:
    """Hand the order over to billing."""
    tool_context.state["order"] = order_id
    tool_context.actions.transfer_to_agent = "billing"
    return f"handed {order_id} over"


async def test_a_tools_transfer_takes_effect_when_its_call_resumes(
    model: ScriptedModelServer,
) -> None:
    """A tool that sets `tool_context.actions.transfer_to_agent` transfers as ADK would after
    running it: the RunModel Step that resumes the turn with its result makes the target's
    first model call, and triage makes none."""
    agent = triage(model)
    agent.tools.append(hand_over)
    driver = RunnerDriver(AdkRunner(agent), default_tool_effect="read")
    model.enqueue(
        reply_tools(("h1", "hand_over", {"order_id": "o-1"})),
        reply_tools(("r1", "refund", {"order_id": "o-1"})),
        reply_text("Refunded."),
    )
    result = await driver.turn("Refund o-1")

    assert [type(o) for o in result.outcomes] == [
        ToolCallsRequested,
        ToolCallsRequested,
        TurnCompleted,
    ]
    assert [instruction(r.body) for r in model.requests] == [
        "Route the customer.",
        "You refund orders.",
        "You refund orders.",
    ]
    assert [tool_names(r.body) for r in model.requests] == [
        ["transfer_to_agent", "lookup_order", "hand_over"],
        ["transfer_to_agent", "refund"],
        ["transfer_to_agent", "refund"],
    ]
    # billing reads the tool's result, as ADK gives another agent's events ("For context").
    assert "handed o-1 over" in json.dumps(model.requests[1].body["messages"])
    assert driver.events.of_type("google_adk.transfer") == [
        {"from_agent": "triage", "to_agent": "billing", "tool_call_id": "h1"}
    ]
    assert [(m.role, m.tool_name, m.text) for m in result.new_messages] == [
        ("assistant", "hand_over", None),
        ("tool", "hand_over", None),
        ("assistant", "refund", None),
        ("tool", "refund", None),
        ("assistant", None, "Refunded."),
    ]
    # The next turn goes on with billing, the agent that answered.
    model.enqueue(reply_text("Anything else?"))
    await driver.turn("Thanks")
    assert instruction(model.requests[-1].body) == "You refund orders."


async def test_a_parallel_agents_children_call_their_models_side_by_side_then_the_next_step(
    model: ScriptedModelServer,
) -> None:
    """SequentialAgent[ParallelAgent[a, b], c]: a and b each on their own scripted server (so
    each gets its own replies, whatever the order of their concurrent requests)."""
    with ScriptedModelServer() as other:
        a = LlmAgent(name="a", model=llm(model), instruction="A.", tools=[lookup_order])
        b = LlmAgent(name="b", model=llm(other), instruction="B.", tools=[refund])
        c = LlmAgent(name="c", model=llm(model), instruction="C.")
        both = ParallelAgent(name="both", sub_agents=[a, b])
        driver = RunnerDriver(
            AdkRunner(SequentialAgent(name="steps", sub_agents=[both, c])),
            default_tool_effect="read",
        )
        model.enqueue(
            reply_tools(("l1", "lookup_order", {"order_id": "o-1"})),
            reply_text("A done."),
            reply_text("C done."),
        )
        other.enqueue(reply_tools(("r1", "refund", {"order_id": "o-1"})), reply_text("B done."))
        result = await driver.turn("Go")

        first, *rest = result.outcomes
        # a's and b's calls, from one RunModel Step, are parallel tool Steps.
        assert isinstance(first, ToolCallsRequested)
        assert sorted(c.tool_call_id for c in first.tool_calls) == ["l1", "r1"]
        assert sorted((r.tool_call_id, r.output) for r in result.records) == [
            ("l1", "order o-1: paid"),
            ("r1", "refunded o-1"),
        ]
        # a and b answer in the second Step; c's model call is the third Step's.
        assert [type(o) for o in rest] == [TurnContinued, TurnCompleted]
        assert [instruction(r.body) for r in model.requests] == ["A.", "A.", "C."]
        assert [instruction(r.body) for r in other.requests] == ["B.", "B."]
        assert tool_results(other.requests[1].body) == {"r1": {"result": "refunded o-1"}}
        texts = [m.text for m in result.new_messages if m.role == "assistant" and m.text]
        assert sorted(texts[:2]) == ["A done.", "B done."] and texts[2] == "C done."


async def test_a_parallel_childs_second_model_call_ends_the_step_after_a_siblings_call(
    model: ScriptedModelServer,
) -> None:
    """ParallelAgent[SequentialAgent[x, y], z]: y's model call is the next Step's, and the
    first Step ends only once z's (slow) call, in flight beside it, has answered: z's request
    is sent once, and every agent's answer is stored once."""
    with ScriptedModelServer() as other:
        x = LlmAgent(name="x", model=llm(model), instruction="X.")
        y = LlmAgent(name="y", model=llm(model), instruction="Y.")
        z = LlmAgent(name="z", model=llm(other), instruction="Z.")
        pipeline = SequentialAgent(name="pipeline", sub_agents=[x, y])
        root = ParallelAgent(name="both", sub_agents=[pipeline, z])
        driver = RunnerDriver(AdkRunner(root), default_tool_effect="read")
        model.enqueue(reply_text("X done."), reply_text("Y done."))
        other.enqueue(reply_text("Z done.", delay_seconds=1), reply_text("Z again."))
        result = await driver.turn("Go")

        assert [type(o) for o in result.outcomes] == [TurnContinued, TurnCompleted]
        assert [instruction(r.body) for r in model.requests] == ["X.", "Y."]
        assert [instruction(r.body) for r in other.requests] == ["Z."]
        texts = sorted(m.text or "" for m in result.new_messages)
        assert texts == ["X done.", "Y done.", "Z done."]


async def test_a_parallel_childs_tool_calls_in_flight_at_the_boundary_are_kept(
    model: ScriptedModelServer,
) -> None:
    """ParallelAgent[SequentialAgent[x, y], z]: z's slow answer asks for a tool while y waits
    at the boundary; the first Step ends with z's call deferred (a tool Step), and y's model
    call is made once, in a later Step."""
    with ScriptedModelServer() as other:
        x = LlmAgent(name="x", model=llm(model), instruction="X.")
        y = LlmAgent(name="y", model=llm(model), instruction="Y.")
        z = LlmAgent(name="z", model=llm(other), instruction="Z.", tools=[lookup_order])
        pipeline = SequentialAgent(name="pipeline", sub_agents=[x, y])
        root = ParallelAgent(name="both", sub_agents=[pipeline, z])
        driver = RunnerDriver(AdkRunner(root), default_tool_effect="read")
        model.enqueue(reply_text("X done."), reply_text("Y done."))
        other.enqueue(
            reply_tools(("l1", "lookup_order", {"order_id": "o-1"}), delay_seconds=1),
            reply_text("Z done."),
        )
        result = await driver.turn("Go")

        first, *_ = result.outcomes
        assert isinstance(first, ToolCallsRequested)
        assert [c.tool_call_id for c in first.tool_calls] == ["l1"]
        assert [instruction(r.body) for r in model.requests] == ["X.", "Y."]
        assert [instruction(r.body) for r in other.requests] == ["Z.", "Z."]
        assert tool_results(other.requests[1].body) == {"l1": {"result": "order o-1: paid"}}
        texts = sorted(m.text or "" for m in result.new_messages if m.role == "assistant")
        assert [t for t in texts if t] == ["X done.", "Y done.", "Z done."]


def test_agent_and_tool_names_must_be_unique_in_the_tree(model: ScriptedModelServer) -> None:
    twin = LlmAgent(name="billing", model=llm(model))
    with pytest.raises(UnsupportedAgentError, match="two agents of the tree are named 'billing'"):
        AdkRunner(SequentialAgent(name="steps", sub_agents=[triage(model), twin]))
    other = LlmAgent(name="other", model=llm(model), tools=[refund])
    with pytest.raises(UnsupportedAgentError, match="agents 'billing' and 'other' both have"):
        AdkRunner(LoopAgent(name="loop", sub_agents=[triage(model), other]))


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools", [])]


def instruction(body: dict[str, Any]) -> str:
    """The agent's own instruction: the system message's first paragraph."""
    return str(body["messages"][0]["content"]).split("\n\n")[0]


def tool_results(body: dict[str, Any]) -> dict[str, Any]:
    return {
        m["tool_call_id"]: json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"
    }
