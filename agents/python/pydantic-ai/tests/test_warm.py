"""Warm runs (warm.py) are invisible from outside: the same model requests, the same stored
messages, warm or cold, and the cold path whenever the warm run does not stand for the
committed state."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from dex_agents.runner import ToolCallsRequested, ToolPolicy, TurnCompleted
from dex_agents.testing import (
    Decision,
    Reject,
    RunnerDriver,
    ScriptedModelServer,
    ScriptedReply,
    ToolRunLog,
    pending_interrupt,
    reply_text,
    reply_tools,
    turns_done,
)
from dex_agents.testing.shared_worker import SessionRun, SharedWorkerSuite, WorkerApp
from dex_agents.testing.warm import WarmWorkerSuite, assert_warm_matches_cold
from dex_agents.types import AgentToolCall
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage

from dex_agents_pydantic_ai import DepsContext, PydanticAiRunner
from dex_agents_pydantic_ai.warm import TASK_NAME

from .apps.agents import (
    AppDeps,
    build_matrix_agent,
    build_triage_agent,
    deps_factory,
    scripted_model,
)

ROOT = Path(__file__).parent.parent


def _script() -> list[ScriptedReply]:
    return [
        # Parallel calls, one of them asking for approval.
        reply_tools(
            ("c1", "get_weather", {"city": "Paris"}),
            ("c2", "lookup_order", {"order_id": "o-1"}),
            ("c3", "send_email", {"to": "ada@example.com", "body": "hi"}),
        ),
        reply_tools(("c4", "lookup_order", {})),  # invalid arguments: a retry prompt
        reply_tools(("c5", "lookup_order", {"order_id": "x-1"})),  # ModelRetry: a failure
        reply_tools(("c6", "refund", {"order_id": "o-1", "amount": 500})),  # rejected
        reply_text("All done."),
        reply_tools(("c7", "get_weather", {"city": "Rome"})),
        reply_text("Sunny in Rome."),
    ]


def _decide(record: AgentToolCall) -> Decision:
    return Reject("Not today.") if record.tool_name == "refund" else "run"


async def _session(
    model: ScriptedModelServer, tool_log: ToolRunLog, warm_runs: int
) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]], PydanticAiRunner[AppDeps]]:
    runner = _runner(model, tool_log, warm_runs)
    driver = RunnerDriver(runner)
    first = len(model.requests)
    model.enqueue(*_script())
    await driver.turn("Help with o-1, please.", decide=_decide)
    await driver.turn("And Rome?", decide=_decide)
    stored = [
        (m.role, m.text, m.tool_call_id, m.tool_name, m.tool_arguments, m.tool_output)
        for m in driver.messages
    ]
    stored.append(("streamed", driver.events.texts()))
    return [request.body for request in model.requests[first:]], stored, runner


async def test_warm_and_cold_send_the_same_requests_and_store_and_stream_the_same(
    model: ScriptedModelServer, tool_log: ToolRunLog
) -> None:
    cold_requests, cold_stored, cold = await _session(model, tool_log, warm_runs=0)
    warm_requests, warm_stored, warm = await _session(model, tool_log, warm_runs=4)

    assert len(cold_requests) == 7
    assert warm_requests == cold_requests
    assert warm_stored == cold_stored
    assert "All done." in cold_stored[-1][1]
    # Resumed warm: after the parallel calls, after the failure, after the rejection, and
    # turn 2's answer; the model step after the retry prompt ran cold.
    assert (warm.warm_runs.hits, cold.warm_runs.hits) == (4, 0)


async def test_the_matrix_agent_sends_the_same_bytes_warm_and_cold(tool_log: ToolRunLog) -> None:
    """The shared check (dex_agents.testing.warm), which includes a message stored between
    two model steps: that step runs cold."""

    def matrix_runner(warm_runs: int, model_url: str) -> PydanticAiRunner[None]:
        return PydanticAiRunner(build_matrix_agent(scripted_model(model_url)), warm_runs=warm_runs)

    warm = await assert_warm_matches_cold(matrix_runner, tool_log)
    # Resumed warm: after the parallel calls, after the rejection, after charge_card and in
    # turn 2; cold: each turn's first step, the one after the retry prompt, the steered one.
    assert (warm.warm_runs.hits, warm.warm_runs.misses) == (4, 5)


def _runner(
    model: ScriptedModelServer, tool_log: ToolRunLog, warm_runs: int, warm_ttl: float | None = None
) -> PydanticAiRunner[AppDeps]:
    return PydanticAiRunner(
        build_triage_agent(scripted_model(model.base_url)),
        deps_factory=deps_factory(tool_log.path),
        warm_runs=warm_runs,
        warm_ttl=warm_ttl,
    )


async def _open_runs_close() -> None:
    """Waits until every warm run's task has ended (the runs were closed), at most 5 s."""
    tasks = [task for task in asyncio.all_tasks() if task.get_name() == TASK_NAME]
    if tasks:
        await asyncio.wait(tasks, timeout=5)
    assert all(task.done() for task in tasks)


async def _first_step(driver: RunnerDriver, text: str) -> tuple[str, ToolCallsRequested]:
    turn_id = driver.start_turn(text)
    outcome = await driver.model_step(turn_id, None)
    assert isinstance(outcome, ToolCallsRequested)
    await driver.run_tools(turn_id, outcome)
    return turn_id, outcome


async def test_a_runner_keeps_at_most_warm_runs_open_the_least_recently_used_goes_cold(
    model: ScriptedModelServer, tool_log: ToolRunLog
) -> None:
    runner = _runner(model, tool_log, warm_runs=1)
    first, second = RunnerDriver(runner, flow_id="s-1"), RunnerDriver(runner, flow_id="s-2")
    model.enqueue(
        reply_tools(("a1", "get_weather", {"city": "Paris"})),
        reply_tools(("b1", "get_weather", {"city": "Rome"})),
        reply_text("Sunny in Paris."),
        reply_text("Sunny in Rome."),
    )
    first_turn, first_calls = await _first_step(first, "Paris?")
    second_turn, second_calls = await _first_step(second, "Rome?")
    assert len(runner.warm_runs) == 1  # s-2's run evicted s-1's

    first_answer = await first.model_step(first_turn, first_calls.framework_run_state)
    second_answer = await second.model_step(second_turn, second_calls.framework_run_state)

    assert isinstance(first_answer, TurnCompleted) and isinstance(second_answer, TurnCompleted)
    assert (runner.warm_runs.hits, runner.warm_runs.misses) == (1, 3)
    assert [m["content"] for m in model.requests[2].body["messages"] if m["role"] == "tool"] == [
        "Sunny in Paris"
    ]
    assert len(runner.warm_runs) == 0
    await _open_runs_close()


async def test_a_warm_run_older_than_its_ttl_is_closed_and_the_step_runs_cold(
    model: ScriptedModelServer, tool_log: ToolRunLog
) -> None:
    runner = _runner(model, tool_log, warm_runs=4, warm_ttl=0.0)
    driver = RunnerDriver(runner)
    model.enqueue(reply_tools(("a1", "get_weather", {"city": "Paris"})))
    turn_id, calls = await _first_step(driver, "Paris?")
    await _open_runs_close()  # it waited for no next step

    model.enqueue(reply_text("Sunny in Paris."))
    assert isinstance(await driver.model_step(turn_id, calls.framework_run_state), TurnCompleted)
    assert runner.warm_runs.hits == 0


EMAIL = {"to": "ana@example.com", "body": "Hi"}


def _worker_script() -> list[ScriptedReply]:
    return [
        reply_tools(
            ("r1", "get_weather", {"city": "Lima"}),
            ("r2", "get_weather", {"city": "Quito"}),
            ("w1", "send_email", EMAIL),
        ),
        reply_tools(("l1", "lookup_order", {})),  # invalid arguments: a retry prompt
        reply_tools(("l2", "lookup_order", {"order_id": "x-1"})),  # ModelRetry: a failure
        reply_text("Sent, and sunny in both."),
    ]


def _warm_hits(run: SessionRun, session: str) -> list[int]:
    """The runner's warm hits after each model step of `session`."""
    return [
        entry["warm_hits"]
        for entry in run.tool_log.entries("model_step")
        if entry["flow_id"] == session
    ]


async def _approve_and_finish(run: SessionRun, session: str) -> list[dict[str, Any]]:
    await run.client.wait_for(session, pending_interrupt("w1"))
    first = len(run.model.requests)
    assert await run.client.resolve_interrupt(session, "w1", approved=True)
    await run.client.wait_for(session, turns_done(1))
    return [request.body for request in run.model.requests[first:]]


class TestWarmRunsInAWorker(SharedWorkerSuite):
    app = WorkerApp(worker_target="tests.apps.warm:flows", worker_cwd=ROOT)

    async def test_a_worker_sends_the_same_requests_warm_and_cold(self, run: SessionRun) -> None:
        results = {}
        for flow_type in ("ColdTriage", "WarmTriage"):
            first = len(run.model.requests)
            run.model.enqueue(*_worker_script())
            session = await run.client.start_session(flow_type, "Weather, then email Ana.")
            after = await _approve_and_finish(run, session)
            results[flow_type] = (run.model.requests[first].body, after, session)

        cold_first, cold_after, cold_session = results["ColdTriage"]
        warm_first, warm_after, warm_session = results["WarmTriage"]
        assert len(cold_after) == 3
        assert (warm_first, warm_after) == (cold_first, cold_after)
        # The step after the approval and the one after the failure resumed warm; the one
        # after the retry prompt ran cold.
        hits = _warm_hits(run, warm_session)
        assert [count - hits[0] for count in hits] == [0, 1, 1, 2]
        assert _warm_hits(run, cold_session) == [0, 0, 0, 0]


class TestWarmMatrixInAWorker(WarmWorkerSuite):
    app = WorkerApp(worker_target="tests.apps.matrix:flows", worker_cwd=ROOT)


async def test_a_cancelled_step_closes_its_warm_run_and_the_next_attempt_runs_cold(
    model: ScriptedModelServer, tool_log: ToolRunLog
) -> None:
    runner = _runner(model, tool_log, warm_runs=4)
    driver = RunnerDriver(runner)
    model.enqueue(
        reply_tools(("a1", "get_weather", {"city": "Paris"})),
        ScriptedReply(hang=True),
        reply_text("Sunny in Paris."),
    )
    turn_id, calls = await _first_step(driver, "Paris?")
    step = asyncio.create_task(driver.model_step(turn_id, calls.framework_run_state))
    await asyncio.to_thread(model.wait_for_requests, 2)
    step.cancel()  # as a cancelled turn or a stopping Worker cancels the Step
    with pytest.raises(asyncio.CancelledError):
        await step
    await _open_runs_close()
    assert (runner.warm_runs.hits, len(runner.warm_runs)) == (1, 0)

    answer = await driver.model_step(turn_id, calls.framework_run_state)

    assert isinstance(answer, TurnCompleted)
    assert runner.warm_runs.hits == 1  # the attempt after ran cold
    assert model.requests[2].body == model.requests[1].body


def _viewing_runner(
    model: ScriptedModelServer, warm_runs: int, views: list[dict[str, Any]]
) -> PydanticAiRunner[int]:
    """An agent whose tool records what its RunContext shows (`views`)."""
    agent: Agent[int, str] = Agent(scripted_model(model.base_url), deps_type=int)

    @agent.tool
    def inspect(ctx: RunContext[int], note: str) -> str:
        views.append(
            {
                "note": note,
                "messages": [_described(message) for message in ctx.messages],
                "run_step": ctx.run_step,
                "usage": (ctx.usage.requests, ctx.usage.tool_calls, ctx.usage.input_tokens),
                "retry": ctx.retry,
                "approved": ctx.tool_call_approved,
                "prompt": ctx.prompt,
                "model": ctx.model.model_name,
                "deps": ctx.deps,
                "tool_call_id": ctx.tool_call_id,
            }
        )
        return f"seen {note}"

    def deps(context: DepsContext) -> int:
        return int(context.session_settings["deps"])

    return PydanticAiRunner(agent, deps_factory=deps, warm_runs=warm_runs)


def _described(message: ModelMessage) -> tuple[str, ...]:
    """A message as kinds and texts, without timestamps and run IDs."""
    described: list[str] = [type(message).__name__]
    for part in message.parts:
        text = getattr(part, "content", None) or getattr(part, "tool_call_id", None)
        described.append(f"{type(part).__name__}:{text}")
    return tuple(described)


async def _viewed_session(
    model: ScriptedModelServer, warm_runs: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], PydanticAiRunner[int]]:
    views: list[dict[str, Any]] = []
    runner = _viewing_runner(model, warm_runs, views)
    driver = RunnerDriver(
        runner, tool_policies={"inspect": ToolPolicy(effect="read")}, session_settings={"deps": 7}
    )
    first = len(model.requests)
    model.enqueue(
        reply_tools(("v1", "inspect", {"note": "alone"})),
        reply_tools(("v2", "inspect", {"note": "left"}), ("v3", "inspect", {"note": "right"})),
        reply_text("Seen three."),
        reply_tools(("v4", "inspect", {"note": "asked"})),
        reply_text("Seen four."),
    )
    await driver.turn("Look around.")
    driver.tool_policies["inspect"] = ToolPolicy(effect="read", requires_approval=True)
    await driver.turn("Once more, with approval.")
    return views, [request.body for request in model.requests[first:]], runner


async def test_a_tool_sees_the_conversation_alike_run_warm_or_cold(
    model: ScriptedModelServer,
) -> None:
    """A tool Step's RunContext is the one of a new run over the turn's history, whether the
    call runs in the turn's warm run (a lone call) or in a run of its own (cold, or one call of
    several, which sees only its own call in the last response)."""
    cold_views, cold_requests, cold = await _viewed_session(model, warm_runs=0)
    warm_views, warm_requests, warm = await _viewed_session(model, warm_runs=4)

    assert warm_views == cold_views
    assert warm_requests == cold_requests
    # The lone calls ran in the warm run (v1, and v4 after its approval); v2 and v3 cold.
    assert (warm.warm_runs.lent, cold.warm_runs.lent) == (2, 0)
    by_note = {view["note"]: view for view in warm_views}
    assert [view["note"] for view in warm_views] == ["alone", "left", "right", "asked"]
    alone = by_note["alone"]["messages"]
    assert ("ModelRequest", "UserPromptPart:Look around.") in alone
    assert alone[-1] == ("ModelResponse", "ToolCallPart:v1")
    # One call of several sees only its own call in the response that made it.
    assert by_note["left"]["messages"][-1] == ("ModelResponse", "ToolCallPart:v2")
    assert by_note["right"]["messages"][-1] == ("ModelResponse", "ToolCallPart:v3")
    # Turn 2's tool sees turn 1 too: the session's history, as the model does.
    asked = by_note["asked"]["messages"]
    assert ("ModelRequest", "UserPromptPart:Look around.") in asked
    assert ("ModelRequest", "UserPromptPart:Once more, with approval.") in asked
    assert [view["approved"] for view in warm_views] == [False, False, False, True]
    # Deps from the turn's session settings, as the model steps'.
    assert {(view["run_step"], view["retry"], view["deps"]) for view in warm_views} == {(0, 0, 7)}
    assert {view["usage"] for view in warm_views} == {(0, 0, 0)}
