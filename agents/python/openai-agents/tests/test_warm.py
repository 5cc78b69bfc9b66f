"""Warm run states (runner.py) are invisible from outside: the shared check
(dex_agents.testing.warm) on the matrix's agent, and the cold path whenever the kept state does
not stand for the committed one."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from agents import Agent, Runner, function_tool
from dex_agents.runner import (
    DeferredToolCall,
    DeferredToolExecution,
    PolicyResolver,
    ToolCallsRequested,
    TurnCompleted,
)
from dex_agents.testing import RunnerDriver, ScriptedModelServer, ToolRunLog
from dex_agents.testing.model_server import reply_text, reply_tools
from dex_agents.testing.shared_worker import WorkerApp
from dex_agents.testing.warm import (
    WarmWorkerSuite,
    assert_warm_matches_cold,
    decide,
    tool_log_env,
    warm_script,
)
from dex_agents.types import AgentToolCall

from dex_agents_openai_agents import OpenAIAgentsRunner, _compat
from dex_agents_openai_agents.runner import _own_items, _state_and_own_items

from .apps.scripted import matrix_agent, scripted_run_config

ROOT = Path(__file__).parent.parent


def _runner(warm_runs: int, model_url: str) -> OpenAIAgentsRunner:
    config = scripted_run_config(model_url, max_retries=0)
    return OpenAIAgentsRunner(matrix_agent(), run_config=config, warm_runs=warm_runs)


async def test_warm_and_cold_send_the_same_bytes_and_store_and_stream_the_same(
    tool_log: ToolRunLog,
) -> None:
    warm = await assert_warm_matches_cold(_runner, tool_log)
    # Every model step after tool calls resumed warm but the steered turn's second one.
    assert (warm.warm_runs.hits, warm.warm_runs.misses) == (5, 1)


async def test_each_model_call_of_a_restored_run_resends_the_turn_so_far_in_the_same_bytes(
    model: ScriptedModelServer, tool_log: ToolRunLog
) -> None:
    """A prompt cache matches the bytes of a request's prefix: the cold path's run state,
    restored from JSON, sends the items of earlier calls as the live run sent them."""
    runner = _runner(0, model.base_url)
    model.enqueue(*warm_script())
    with tool_log_env(tool_log):
        driver = RunnerDriver(runner)
        await driver.turn("Help with ticket t-1, please.", decide=decide)
    inputs = [[json.dumps(item) for item in request.body["input"]] for request in model.requests]
    assert len(inputs) == 5
    for before, after in itertools.pairwise(inputs):
        assert after[: len(before)] == before


async def test_a_state_and_items_taken_without_the_history_are_the_sdks_own(
    model: ScriptedModelServer,
) -> None:
    """A model Step takes the run's state and own items with the history left out of the
    result (_compat.history_out); they must be what the SDK's full calls give."""

    @function_tool(needs_approval=True)
    def refund(order_id: str) -> str:
        """Refunds an order."""
        return order_id

    agent = Agent(name="Support", tools=[refund], model="gpt-4.1")
    history: list[Any] = [
        {"role": "user", "content": "Hi"},
        {"type": "function_call", "call_id": "c0", "name": "refund", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c0", "output": "done"},
        {"role": "assistant", "content": "Refunded."},
        {"role": "user", "content": "And order o-2, please."},
    ]
    model.enqueue(reply_tools(("c1", "refund", {"order_id": "o-2"})))
    config = scripted_run_config(model.base_url)
    result = Runner.run_streamed(agent, list(history), run_config=config)
    async for _ in result.stream_events():
        pass
    assert result.interruptions
    full_state, full_items = result.to_state(), result.to_input_list()
    assert _compat.history_left_out(result) == history

    state, items = _state_and_own_items(result, len(history))

    assert items == full_items[len(history) :] == _own_items(result, len(history))
    assert [item["type"] for item in items] == ["function_call"]
    assert state.to_json() == full_state.to_json()
    assert state._original_input == history and state._original_input is not result.input
    assert result.input == history and result.to_input_list() == full_items  # put back


class ChangingListing:
    """A tool source whose listing a test changes; no call of its tools runs here."""

    def __init__(self, *names: str) -> None:
        self.names = list(names)

    async def list_tools(self, *, refresh: bool = False) -> list[str]:
        return list(self.names)

    def tool_definitions(self) -> list[dict[str, Any]]:
        schema = {"type": "object", "properties": {}}
        return [
            {"type": "function", "function": {"name": name, "parameters": schema}}
            for name in self.names
        ]

    def has_tool(self, name: str) -> bool:
        return name in self.names

    def deferred_tool_call(
        self, tool_call_id: str, name: str, arguments: str, resolve: PolicyResolver | None = None
    ) -> DeferredToolCall:
        return DeferredToolCall(
            tool_call_id=tool_call_id,
            tool_name=name,
            arguments=arguments,
            tool_source_reference="listing",
        )

    def owns(self, record: AgentToolCall) -> bool:
        return record.tool_source_reference == "listing"

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> Any:
        raise AssertionError("no call of a listed tool runs here")


async def test_a_root_rebuilt_between_a_turns_model_steps_resumes_on_the_cold_path(
    model: ScriptedModelServer, tool_log: ToolRunLog
) -> None:
    """A tool source's listing that changes within a turn gives the next model Step another
    gated root: the cold path runs on it, as a Worker without the kept state would."""
    listing = ChangingListing("forecast")
    config = scripted_run_config(model.base_url, max_retries=0)
    runner = OpenAIAgentsRunner(
        matrix_agent(), run_config=config, tool_sources=[listing], warm_runs=8
    )
    ticket = {"ticket_id": "t-1", "status": "open"}
    model.enqueue(reply_tools(("w1", "update_ticket", ticket)), reply_text("Opened."))
    with tool_log_env(tool_log):
        driver = RunnerDriver(runner)
        turn_id = driver.start_turn("Open ticket t-1.")
        requested = await driver.model_step(turn_id, None)
        assert isinstance(requested, ToolCallsRequested)
        await driver.run_tools(turn_id, requested)
        listing.names.append("alerts")
        done = await driver.model_step(turn_id, requested.framework_run_state)

    assert isinstance(done, TurnCompleted) and done.turn_error is None
    assert (runner.warm_runs.hits, runner.warm_runs.misses) == (0, 1)
    offered = [[tool["name"] for tool in request.body["tools"]] for request in model.requests]
    assert "alerts" not in offered[0] and "alerts" in offered[1]
    assert tool_log.count("update_ticket") == 1


class TestWarmInAWorker(WarmWorkerSuite):
    app = WorkerApp(worker_target="tests.apps.matrix:flows", worker_cwd=ROOT)
