"""MCP tools with a Pydantic AI agent: the shared suite (`dex_agents.testing.mcp_source`)
through a real Worker process, whose runner offers the tools of the core's test MCP server
(stdio) beside the agent's own; the README's example; a call that resumes when its server
cannot be listed."""

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
    reply_text,
    reply_tools,
)
from dex_agents.testing.mcp_source import McpSourceSuite
from dex_agents.testing.readme import readme_block
from dex_agents.testing.shared_worker import WorkerApp, chat_completions
from pydantic_ai import Agent

from dex_agents_pydantic_ai import PydanticAiRunner

from .apps.agents import scripted_model
from .test_readme import README

ROOT = Path(__file__).parent.parent
SERVER = ROOT.parent / "core" / "tests" / "mcp" / "server.py"


class TestMcpToolSource(McpSourceSuite):
    app = WorkerApp(worker_target="tests.apps.mcp:flows", worker_cwd=ROOT)


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
