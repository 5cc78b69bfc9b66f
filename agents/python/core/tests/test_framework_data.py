"""A runner's own data about a tool call (`ToolExecutionResult.framework_data`: framework state
a tool wrote, actions it asked for) is stored with the call's record, handed back to the
runner in every RunModel Step that follows, and kept off the HTTP API. The Steps run in this
process (`StepHarness`) against the scripted model server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from dex_agents import AgentSessionFlow, AgentSessionOptions, ToolPolicy
from dex_agents.runner import AgentToolCall, AgentTurnContext, AgentTurnOutcome, ToolExecutionResult
from dex_agents.testing import ScriptedRunner, reply_text, reply_tools
from dex_agents.testing.harness import StepHarness
from dex_agents.web.wire import ToolCall

from .helpers import turns_done

STATE_DELTA = json.dumps({"state_delta": {"cart": ["tea"]}, "actions": {"escalate": False}})


def add_to_cart(item: str) -> ToolExecutionResult:
    """A write that also changes the framework's state."""
    return ToolExecutionResult(f"added {item}", framework_data=STATE_DELTA)


class SeeingRunner(ScriptedRunner):
    """Remembers the framework data of the records each RunModel Step is given."""

    def __init__(self) -> None:
        super().__init__([add_to_cart])
        self.seen: list[list[AgentToolCall]] = []

    async def run_model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome:
        self.seen.append(list(turn.tool_calls))
        return await super().run_model_step(turn)


@pytest.fixture
async def seeing(
    database_url: str, model, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[SeeingRunner, StepHarness]]:
    runner = SeeingRunner()
    monkeypatch.setenv("DEX_AGENTS_SCRIPTED_MODEL_URL", model.base_url)
    options = AgentSessionOptions(
        tool_policies={"add_to_cart": ToolPolicy(effect="idempotent_write")}
    )
    flows = [AgentSessionFlow(flow_type="Shop", runner=runner, options=options)]
    async with StepHarness(flows, database_url) as harness:
        yield runner, harness


async def test_a_tool_steps_framework_data_reaches_the_next_run_model_steps(seeing, model, client):
    runner, harness = seeing
    model.enqueue(reply_tools(("c1", "add_to_cart", {"item": "tea"})), reply_text("Added."))
    session = await client.start_session("Shop", "Add tea.")
    await harness.run_until_idle(session)

    snapshot = await client.wait_for(session, turns_done(1), timeout=5)
    assert snapshot.messages[-1].text == "Added."
    # The first RunModel had no record yet; the one after the tool Step got the stored data.
    first, second = runner.seen
    (record,) = second
    assert first == []
    assert (record.tool_call_id, record.status, record.output, record.framework_data) == (
        "c1",
        "succeeded",
        "added tea",
        STATE_DELTA,
    )
    # What only Steps read stays off the HTTP API.
    shown = ToolCall.model_validate(record.model_dump(mode="json")).model_dump(mode="json")
    assert shown["output"] == "added tea" and "framework_data" not in shown
