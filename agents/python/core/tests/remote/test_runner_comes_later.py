"""A `dex-agents worker` process started before its remote runner, and a runner that dies
in a tool call: the Worker waits for the runner (one log line, ready meanwhile, its other
flow served), and the Step history shows each call that did not reach the runner as a failed
Step with the reason, while `tool_call_started` counts the calls the runner really started.

One Worker process serves the module (SQLite: the waiting is the same on either database).
Its `Late` flow's runner is a scripted runner server on a port fixed in advance, which each
test starts, stops and starts again; its `Up` flow's runner is up throughout. The first test
sees the Worker before any `Late` runner answered, so it runs first (file order).
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from dex_agents.cli import cli
from dex_agents.client import AgentClient
from dex_agents.testing.processes import WorkerProcess
from dex_agents.testing.remote_runner_server import (
    RunnerCall,
    Script,
    ScriptedRunnerServer,
    final_text,
    tool_calls,
    tool_output,
)
from dex_agents.testing.sessions import events_of, turns_done
from dex_agents.testing.tool_log import ToolRunLog

UP = "Up"
LATE = "Late"
WAITING_LINE = f"the runner of {LATE} at"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Stack:
    """The module's processes and servers."""

    def __init__(self, tmp: Path) -> None:
        self.database_url = f"sqlite:///{tmp / 'dex.sqlite'}"
        self.late_port = _free_port()
        self.late_url = f"http://127.0.0.1:{self.late_port}"
        self.health_port = _free_port()
        self.up = ScriptedRunnerServer([UP]).start()
        config = tmp / "flows.toml"
        config.write_text(
            f'[flows.{UP}]\nurl = "{self.up.base_url}"\n[flows.{LATE}]\nurl = "{self.late_url}"\n'
        )
        self.worker = WorkerProcess(
            f"--remote-config={config}",
            database_url=self.database_url,
            env={"DEX_AGENTS_HTTP_PORT": str(self.health_port)},
            log_path=tmp / "worker.log",
        )

    def late_runner(self) -> ScriptedRunnerServer:
        return ScriptedRunnerServer([LATE], port=self.late_port)

    def readyz(self) -> httpx.Response:
        return httpx.get(f"http://127.0.0.1:{self.health_port}/readyz", timeout=5)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    stack = Stack(tmp_path_factory.mktemp("runner-comes-later"))
    try:
        stack.worker.start()  # returns once ready: no Late runner listens yet
        yield stack
    finally:
        stack.worker.stop()
        stack.up.stop()


@pytest.fixture
async def client(stack: Stack) -> AsyncIterator[AgentClient]:
    agent_client = AgentClient(stack.database_url)
    yield agent_client
    await agent_client.close()


@pytest.fixture
def late_runners() -> Iterator[list[ScriptedRunnerServer]]:
    """The Late runners a test starts; each stopped after it."""
    started: list[ScriptedRunnerServer] = []
    yield started
    for server in started:
        server.stop()


async def test_a_worker_started_before_its_runner_serves_the_flow_once_it_comes(
    stack: Stack, client: AgentClient, late_runners: list[ScriptedRunnerServer]
) -> None:
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{stack.late_url}/describe")
    # Ready while the runner is away, and saying what it waits for.
    waiting = stack.readyz()
    assert waiting.status_code == 200
    assert (
        f"waiting for the runner of {LATE} at {stack.late_url}" in waiting.json()["checks"]["flows"]
    )

    late = await client.start_session(LATE, "Are you there?")
    # The other flow is served meanwhile.
    stack.up.script("run_model_step", final_text("Up here."))
    up = await client.start_session(UP, "Hello")
    assert (await client.wait_for(up, turns_done(1), timeout=60)).messages[-1].text == "Up here."
    # The Late session's first Step waits for the runner, having written nothing.
    snapshot = await client.get_agent_snapshot(late)
    assert snapshot.state is None and snapshot.messages == []
    assert [(s.step_type, s.status) for s in await client.get_step_history(late)] == [
        ("StartAgentSession", "scheduled")
    ]

    runner = stack.late_runner()
    runner.script("run_model_step", final_text("Here now."))
    late_runners.append(runner.start())
    snapshot = await client.wait_for(late, turns_done(1), timeout=60)

    assert [m.text for m in snapshot.messages] == ["Are you there?", "Here now."]
    assert [(s.step_type, s.attempts) for s in await client.get_step_history(late)][:2] == [
        ("StartAgentSession", 1),
        ("RunModel", 1),
    ]
    log = stack.worker.log()
    assert f"hosts {UP}, {LATE}; waiting for {WAITING_LINE} {stack.late_url}" in log
    assert log.count("is not up yet") == 1, log  # one line, however many times it asked
    assert f"{WAITING_LINE} {stack.late_url} is not up yet" in log
    assert f"{WAITING_LINE} {stack.late_url} answers: serving {LATE}" in log
    assert "waiting for" not in stack.readyz().json()["checks"]["flows"]


def _crash_after_start(log: ToolRunLog, started: threading.Event, kill: threading.Event) -> Script:
    """A read that starts at the runner (recorded in `log`), then loses its connection when
    `kill` is set, as when the runner process dies."""

    def answer(call: RunnerCall) -> None:
        call.send({"accepted": True})
        log.record(call.body["tool_call"]["tool_name"], attempt=call.body["attempt"])
        started.set()
        kill.wait(30)
        raise ConnectionResetError("the runner died")

    return answer


async def test_a_runner_killed_in_a_read_shows_the_failed_steps_then_the_call_that_ran(
    stack: Stack,
    client: AgentClient,
    late_runners: list[ScriptedRunnerServer],
    tmp_path: Path,
) -> None:
    tool_log = ToolRunLog(tmp_path / "tools.jsonl")
    started, kill = threading.Event(), threading.Event()
    dying = stack.late_runner()
    dying.script("run_model_step", tool_calls(("r1", "lookup", '{"order": 7}'), effect="read"))
    dying.script("execute_deferred_tool_call", _crash_after_start(tool_log, started, kill))
    late_runners.append(dying.start())
    session = await client.start_session(LATE, "Where is order 7?")
    assert await asyncio.to_thread(started.wait, 60)
    dying.stop()  # nothing listens on the port any more
    kill.set()  # and the call's connection goes

    async def failed_calls() -> int:
        history = await client.get_step_history(session)
        return sum(1 for s in history if s.step_type == "CallTool" and s.status == "failed")

    for _ in range(600):
        if await failed_calls() >= 2:
            break
        await asyncio.sleep(0.05)
    back = stack.late_runner()
    back.script("execute_deferred_tool_call", tool_output("order 7: shipped", log=tool_log))
    back.script("run_model_step", final_text("It shipped."))
    late_runners.append(back.start())
    snapshot = await client.wait_for(session, turns_done(1), timeout=60)
    assert snapshot.messages[-1].text == "It shipped."

    # Started twice at the runner (counted there), and as many tool_call_started events.
    assert tool_log.count("lookup") == 2
    started_events = await events_of(client, session, "tool_call_started")
    assert started_events == [{"tool_call_id": "r1", "tool_name": "lookup"}] * 2
    finished = await events_of(client, session, "tool_call_finished")
    assert [e["status"] for e in finished] == ["succeeded"]

    calls = [s for s in await client.get_step_history(session) if s.step_type == "CallTool"]
    *failed, ran = calls
    assert len(failed) >= 2 and all(s.status == "failed" for s in failed)
    assert (ran.status, ran.attempts, ran.error) == ("succeeded", 1, None)
    # The first: the attempt that broke off, then the one that found nobody listening.
    first = failed[0]
    assert first.attempts == 2
    assert first.error is not None and "broke off after it started" in first.error
    assert "then the call did not start" in first.error and "cannot be reached" in first.error
    for step in failed[1:]:
        assert step.attempts == 1
        assert step.error is not None and step.error.startswith("the call did not start")

    # `dex-agents history` shows them so: failed, with the start of their error.
    command = ["history", session, "--database-url", stack.database_url]
    shown = await asyncio.to_thread(CliRunner().invoke, cli, command)
    assert shown.exit_code == 0, shown.output
    lines = [line for line in shown.output.splitlines() if "CallTool-" in line]
    assert [line.split()[3] for line in lines] == ["failed"] * len(failed) + ["succeeded"]
    assert all("the call did not" in line for line in lines[1:-1])
    assert lines[-1].endswith(" -")
