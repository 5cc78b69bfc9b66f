"""MCP tools through a real Worker process running a Pydantic AI agent: the runner offers the
tools of the core's test MCP server (stdio) beside the agent's own, each call is deferred and
runs once in its own tool Step through the McpToolSource, with the idempotency key in `_meta`
and the policy from the tool's annotations."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from dex_agents.mcp import McpToolSource, StdioServer
from dex_agents.runner import ToolCallsRequested, TurnCompleted
from dex_agents.testing import (
    RunnerDriver,
    ScriptedModelServer,
    ToolRunLog,
    events_of,
    pending_interrupt,
    reply_text,
    reply_tools,
    step_types,
    turns_done,
)
from dex_agents.testing.shared_worker import (
    SessionRun,
    SharedWorkerSuite,
    WorkerApp,
    chat_completions,
)
from pydantic_ai import Agent

from dex_agents_pydantic_ai import PydanticAiRunner

from .apps.agents import scripted_model
from .test_readme import README, readme_block

ROOT = Path(__file__).parent.parent
SERVER = ROOT.parent / "core" / "tests" / "mcp" / "server.py"


class TestMcpToolSource(SharedWorkerSuite):
    app = WorkerApp(worker_target="tests.apps.mcp:flows", worker_cwd=ROOT)

    async def test_read_and_idempotent_tools_run_once_in_tool_steps(self, run: SessionRun) -> None:
        run.model.enqueue(
            reply_tools(
                ("r1", "local__lookup", {"city": "Lima"}),
                ("i1", "local__set_value", {"name": "mode", "value": "eco"}),
                ("n1", "local_note", {"text": "asked"}),
            ),
            reply_text("Sunny; eco is on."),
        )
        session = await run.client.start_session("McpAgent", "Weather in Lima? Eco mode.")
        snapshot = await run.client.wait_for(session, turns_done(1))

        offered = {t["function"]["name"]: t["function"] for t in run.requests[0].body["tools"]}
        assert {"local__lookup", "local__set_value", "local__delete_item", "local_note"} <= set(
            offered
        )
        lookup = offered["local__lookup"]
        assert lookup["description"] == "The weather in a city."
        assert lookup["parameters"]["properties"]["city"]["type"] == "string"
        assert run.tool_outputs(1) == {
            "r1": "sunny in Lima",
            "i1": "mode=eco",
            "n1": "noted: asked",
        }
        assert {(e["tool"], e["key"]) for e in run.tool_log.entries()} == {
            ("lookup", f"{session}/turn-1/r1"),
            ("set_value", f"{session}/turn-1/i1"),
        }
        deferred = await events_of(run.client, session, "tool_call_deferred")
        assert {e["tool_call_id"]: (e["effect"], e["requires_approval"]) for e in deferred} == {
            "r1": ("read", False),
            "i1": ("idempotent_write", False),
            "n1": ("read", False),
        }
        steps = await step_types(run.client, session)
        assert steps.count("CallTool") == 3
        assert "AwaitToolApproval" not in steps
        assert snapshot.messages[-1].text == "Sunny; eco is on."

    async def test_a_destructive_tool_waits_for_approval_and_runs_once_after_a_restart(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(
            reply_tools(("d1", "local__delete_item", {"item": "old-report"})),
            reply_text("Deleted."),
        )
        session = await run.client.start_session("McpAgent", "Delete the old report.")
        # No annotation says read or idempotent: the session's default, unclassified, asks.
        await run.client.wait_for(session, pending_interrupt("d1"))
        assert run.tool_log.count("delete_item") == 0
        # A new Worker process runs the call from the record's reference, with no listing.
        run.kill_and_restart()
        assert await run.client.resolve_interrupt(session, "d1", approved=True)
        snapshot = await run.client.wait_for(session, turns_done(1))

        assert [e["key"] for e in run.tool_log.entries("delete_item")] == [f"{session}/turn-1/d1"]
        assert run.tool_outputs(1) == {"d1": "deleted old-report"}
        (deferred,) = await events_of(run.client, session, "tool_call_deferred")
        assert (deferred["effect"], deferred["requires_approval"]) == ("unclassified", True)
        (finished,) = await events_of(run.client, session, "tool_call_finished")
        assert finished["status"] == "succeeded"
        assert snapshot.messages[-1].text == "Deleted."
        steps = await step_types(run.client, session)
        assert [
            s for s in steps if s in {"AwaitToolApproval", "CallSingleAttemptTool", "CallTool"}
        ] == ["AwaitToolApproval", "CallSingleAttemptTool"]

    async def test_explicit_policies_win_over_the_annotations(self, run: SessionRun) -> None:
        run.model.enqueue(
            reply_tools(
                ("r1", "local__lookup", {"city": "Lima"}),
                ("d1", "local__delete_item", {"item": "old-report"}),
            ),
            reply_text("Done."),
        )
        session = await run.client.start_session("McpPolicies", "Lima, and delete it.")
        await run.client.wait_for(session, turns_done(1))

        deferred = await events_of(run.client, session, "tool_call_deferred")
        assert {e["tool_call_id"]: (e["effect"], e["requires_approval"]) for e in deferred} == {
            # The session's ToolPolicy over the readOnlyHint.
            "r1": ("non_idempotent_write", False),
            # The source's ToolPolicy over the session's default (unclassified).
            "d1": ("idempotent_write", False),
        }
        assert sorted(e["tool"] for e in run.tool_log.entries()) == ["delete_item", "lookup"]
        steps = await step_types(run.client, session)
        assert (steps.count("CallSingleAttemptTool"), steps.count("CallTool")) == (1, 1)
        assert "AwaitToolApproval" not in steps


async def test_the_readme_mcp_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: ScriptedModelServer
) -> None:
    """The README's MCP server and Worker module as written, the model served by the scripted
    server: the tool call runs through the source against the server subprocess."""
    for name in ("weather_server.py", "weather_app.py"):
        (tmp_path / name).write_text(readme_block(README, f"# {name}"))
    monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "scripted")
    spec = importlib.util.spec_from_file_location("weather_app", tmp_path / "weather_app.py")
    assert spec and spec.loader
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    model.enqueue(
        reply_tools(("f1", "weather__forecast", {"city": "Lima"})), reply_text("Sunny in Lima.")
    )

    turn = await RunnerDriver(app.runner).turn("Weather in Lima?")

    assert [(r.tool_name, r.effect, r.status, r.output) for r in turn.records] == [
        ("weather__forecast", "read", "succeeded", "sunny in Lima")
    ]
    assert "weather__forecast" in {tool["name"] for tool in model.requests[0].body["tools"]}
    assert turn.new_messages[-1].text == "Sunny in Lima."


async def test_a_pending_call_resumes_when_its_server_cannot_be_listed(
    model: ScriptedModelServer, tool_log: ToolRunLog
) -> None:
    """A Worker that restarts after the call ran, and cannot list the server, still resumes
    the turn with the call's recorded result."""
    agent = Agent(scripted_model(model.base_url), instructions="Use the tools.")
    env = {"MCP_TEST_RUN_LOG": str(tool_log.path)}
    up = StdioServer("local", command=sys.executable, args=[str(SERVER), "stdio"], env=env)
    down = StdioServer("local", command=sys.executable, args=["-c", "raise SystemExit(1)"])
    driver = RunnerDriver(PydanticAiRunner(agent, tool_sources=[McpToolSource([up])]))
    model.enqueue(
        reply_tools(("r1", "local__lookup", {"city": "Lima"})), reply_text("Sunny in Lima.")
    )
    turn_id = driver.start_turn("Weather in Lima?")
    requested = await driver.model_step(turn_id, None)
    assert isinstance(requested, ToolCallsRequested)
    await driver.run_tools(turn_id, requested)

    driver.runner = PydanticAiRunner(agent, tool_sources=[McpToolSource([down])])
    done = await driver.model_step(turn_id, requested.framework_run_state)

    assert isinstance(done, TurnCompleted) and done.turn_error is None
    assert chat_completions.tool_outputs(model.requests[-1]) == {"r1": "sunny in Lima"}
    assert tool_log.count("lookup") == 1
