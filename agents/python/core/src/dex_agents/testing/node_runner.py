"""The spec matrix for a TypeScript runner: a real Python Worker calling a runner in a real Node
process, and the tests only a runner in its own process can run (die alone, be aborted,
restart with no cache, outlive the Worker).

Every TypeScript adapter package runs the same suites from its e2e/ directory:

    # e2e/flows.py: the Worker's flows, the Node runner started beside it
    from pathlib import Path
    from dex_agents.testing.node_runner import node_runner_flows

    flows = node_runner_flows(Path(__file__).parent.parent / "dist-test" / "e2e" / "matrix-app.js")

    # e2e/test_matrix.py
    from pathlib import Path
    from dex_agents.testing.node_runner import (
        NodeRunnerMatrixSuite, RunnerOfItsOwnSuite, node_matrix_app, runner_of_its_own_app,
    )

    E2E = Path(__file__).parent
    APP = E2E.parent / "dist-test" / "e2e" / "matrix-app.js"

    class TestMatrix(NodeRunnerMatrixSuite):
        app = node_matrix_app(E2E)

    class TestRunnerOfItsOwn(RunnerOfItsOwnSuite):
        runner_app = APP
        app = runner_of_its_own_app(E2E)

The matrix app (a JavaScript file) serves the matrix's three flow types (see
`dex_agents.testing.matrix`) with `serveRunners` on $PORT (0: any), prints
`runners at <url>` as its first line, talks to the scripted model server at
$DEX_AGENTS_SCRIPTED_MODEL_URL and logs tool runs to $TOOL_LOG.

The Node process is a child of the Worker, in its process group: a SIGKILL of the Worker's
group (the matrix's kill tests) takes the runner down with it, and the restarted Worker starts
a new one, as a deployment that runs both in one container would. The Worker restarts a
runner that exits on its own (a supervisor's job in production) and writes the runner's PID
to $RUNNER_PID_FILE, so a test can SIGKILL the runner alone. With $RUNNER_URL set, the Worker
starts no runner and calls that one, served by a process of its own.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import ClassVar

import pytest

from .. import texts
from ..flow import AgentSessionFlow
from ..remote import remote_flow
from .matrix import CLIENT_RETRIES_FLOW_TYPE, DEADLINE_FLOW_TYPE, FLOW_TYPE, MatrixSuite
from .matrix_app import matrix_options
from .model_server import ScriptedModelServer, ScriptedReply, reply_text, reply_tools
from .scripted_runner import MODEL_URL_ENV
from .sessions import events_of, turns_done, wait_until
from .shared_worker import ModelView, SessionRun, SharedWorkerSuite, WorkerApp, chat_completions
from .tool_log import ToolRunLog

__all__ = [
    "NodeRunner",
    "NodeRunnerMatrixSuite",
    "RunnerOfItsOwnSuite",
    "node_matrix_app",
    "node_runner_flows",
    "runner_of_its_own_app",
]

PID_FILE_ENV = "RUNNER_PID_FILE"
RUNNER_URL_ENV = "RUNNER_URL"
_READY = "runners at "


def start_node_app(
    app: Path, port: int, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], str]:
    """The matrix app in a Node process, once it serves, and the URL its first line gives."""
    process = subprocess.Popen(
        ["node", str(app)],
        env={**os.environ, **(env or {}), "PORT": str(port)},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith(_READY):
        process.kill()
        raise RuntimeError(f"the Node runner {app} did not start: {line!r}")
    return process, line.removeprefix(_READY).strip()


class NodeRunner:
    """The Node runner process on one port, started again whenever it exits."""

    def __init__(self, app: Path) -> None:
        self.app = app
        self.port = 0
        self.process = self._start()
        self._stopping = False
        atexit.register(self.stop)
        threading.Thread(target=self._supervise, name="node-runner", daemon=True).start()

    def _start(self) -> subprocess.Popen[str]:
        process, self.url = start_node_app(self.app, self.port)
        self.port = int(self.url.rsplit(":", 1)[1].split("/", 1)[0])
        pid_file = os.environ.get(PID_FILE_ENV)
        if pid_file:  # whole or not at all: a test may read it at any moment
            Path(f"{pid_file}.new").write_text(str(process.pid))
            os.replace(f"{pid_file}.new", pid_file)
        return process

    def _supervise(self) -> None:
        while not self._stopping:
            code = self.process.wait()
            # A SIGTERM is the Worker's process group stopping: the runner goes with it.
            if self._stopping or code in (-signal.SIGTERM, 128 + signal.SIGTERM):
                return
            for _ in range(50):  # the port may take a moment to free
                try:
                    self.process = self._start()
                    break
                except RuntimeError:
                    time.sleep(0.1)
            if self._stopping:  # stopped while this one started: it must not outlive us
                self.process.kill()

    def stop(self) -> None:
        self._stopping = True
        self.process.kill()


def node_runner_flows(app: Path) -> list[AgentSessionFlow]:
    """The matrix's three flow types, served by `app` in a Node child of this process, or by
    the runner at $RUNNER_URL (a separate service) when it is set."""
    url = os.environ.get(RUNNER_URL_ENV) or NodeRunner(app).url
    return [
        remote_flow(url, FLOW_TYPE, matrix_options()),
        remote_flow(url, DEADLINE_FLOW_TYPE, matrix_options(timedelta(seconds=1))),
        remote_flow(url, CLIENT_RETRIES_FLOW_TYPE, matrix_options()),
    ]


def node_matrix_app(
    e2e_dir: Path, model_view: ModelView = chat_completions, worker_target: str = "flows:flows"
) -> WorkerApp:
    """The shared Worker on `worker_target` (in `e2e_dir`), writing its runner's PID to a file
    of this test process's own."""
    pid_file = (
        Path(tempfile.gettempdir()) / f"dex-node-runner-{os.getpid()}-{e2e_dir.parent.name}.pid"
    )
    return WorkerApp(worker_target, e2e_dir, model_view, {PID_FILE_ENV: str(pid_file)})


def runner_of_its_own_app(
    e2e_dir: Path, model_view: ModelView = chat_completions, worker_target: str = "flows:flows"
) -> WorkerApp:
    """The shared Worker calling a runner the tests serve on a free port of their own."""
    return WorkerApp(
        worker_target, e2e_dir, model_view, {RUNNER_URL_ENV: f"http://127.0.0.1:{_free_port()}/dex"}
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class NodeRunnerMatrixSuite(MatrixSuite):
    """The matrix, and what a Node runner killed alone or aborted must do."""

    def runner_pid(self) -> int:
        return int(Path(self.app.worker_env[PID_FILE_ENV]).read_text())

    def kill_runner(self) -> int:
        """SIGKILLs the Node runner alone; returns the PID it had."""
        pid = self.runner_pid()
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: self.runner_pid() != pid, what="the Worker to start the runner again")
        return pid

    async def test_a_runner_killed_in_a_single_attempt_write_leaves_it_outcome_unknown(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(
            reply_tools(("c1", "charge_card", {"amount": 40, "seconds": 60})),
            reply_text("The charge may or may not have gone through."),
        )
        client = run.client
        session = await client.start_session(FLOW_TYPE, "Charge 40.")
        wait_until(lambda: run.phases("charge_card") == ["started"], what="the charge to start")
        killed = self.kill_runner()
        snapshot = await client.wait_for(session, turns_done(1), timeout=60)

        # The write ran once, in the killed process, and was not tried again.
        assert run.phases("charge_card") == ["started"]
        assert {e["pid"] for e in run.tool_log.entries("charge_card")} == {killed}
        assert run.tool_outputs(1) == {"c1": texts.OUTCOME_UNKNOWN_TEXT}
        assert snapshot.messages[-1].text == "The charge may or may not have gone through."
        history = await client.get_step_history(session)
        assert [(s.step_type, s.status) for s in history] == [
            ("StartAgentSession", "succeeded"),
            ("RunModel", "succeeded"),
            ("CallSingleAttemptTool", "failed"),
            ("ResumeTurn", "succeeded"),
            ("RecordToolOutcomeUnknown", "succeeded"),
            ("RunModel", "succeeded"),
            ("AwaitUserMessage", "waiting"),
        ]
        assert history[2].attempts == 1

    async def test_cancel_turn_aborts_the_running_model_call_in_the_runner(
        self, run: SessionRun
    ) -> None:
        dropped = run.model.dropped
        run.model.enqueue(ScriptedReply(text="never delivered", hang=True), reply_text("Next."))
        client = run.client
        session = await client.start_session(FLOW_TYPE, "Write an essay.")
        await asyncio.to_thread(run.model.wait_for_requests, run.first_request + 1, 30)
        assert await client.cancel_turn(session)
        await client.wait_for(session, turns_done(1), timeout=30)
        # The runner aborted its model call: the model server saw its request go away.
        await asyncio.to_thread(run.model.wait_for_dropped, dropped + 1, 10)

        assert await client.send_user_message(session, "Short one.")
        snapshot = await client.wait_for(session, turns_done(2), timeout=30)
        assert [m.text for m in snapshot.messages] == ["Write an essay.", "Short one.", "Next."]
        assert await events_of(client, session, "turn_cancelled") == [{"message_count": 0}]
        history = await client.get_step_history(session)
        assert [(s.step_type, s.status) for s in history[:3]] == [
            ("StartAgentSession", "succeeded"),
            ("RunModel", "cancelled"),
            ("FinishTurnCancellation", "succeeded"),
        ]
        assert len(run.requests) == 2

    async def test_a_restarted_runner_asks_for_the_history_it_lost(self, run: SessionRun) -> None:
        run.model.enqueue(reply_text("Kyiv is cold."), reply_text("Pack a coat."))
        client = run.client
        first = await client.start_session_and_wait(FLOW_TYPE, "How is Kyiv?", timeout=30)
        assert first.text == "Kyiv is cold."
        self.kill_runner()
        assert await client.send_user_message(first.session_id, "What should I pack?")
        snapshot = await client.wait_for(first.session_id, turns_done(2), timeout=60)

        assert snapshot.messages[-1].text == "Pack a coat."
        # The new process holds no message of the session: it asked the Worker for them all,
        # and the model saw the first turn, its answer included.
        assert run.user_texts(1) == ["How is Kyiv?", "What should I pack?"]
        assert "Kyiv is cold." in json.dumps(run.requests[1].body)


class RunnerOfItsOwnSuite(SharedWorkerSuite):
    """The runner as a separate service the tests start, outliving the Worker's kills."""

    runner_app: ClassVar[Path]
    """The matrix app's JavaScript file."""

    @pytest.fixture(scope="class", autouse=True)
    @classmethod
    def service(
        cls, shared_model: ScriptedModelServer, shared_tool_log: ToolRunLog
    ) -> Iterator[subprocess.Popen[str]]:
        """The Node runner, started before the Worker (autouse) and outliving its kills."""
        port = int(cls.app.worker_env[RUNNER_URL_ENV].rsplit(":", 1)[1].split("/", 1)[0])
        env = {MODEL_URL_ENV: shared_model.base_url, "TOOL_LOG": str(shared_tool_log.path)}
        process, _ = start_node_app(cls.runner_app, port, env)
        yield process
        process.kill()
        process.wait()

    async def test_a_worker_killed_in_run_model_reruns_it_against_the_same_runner(
        self, run: SessionRun, service: subprocess.Popen[str]
    ) -> None:
        run.model.enqueue(
            reply_tools(("r1", "get_weather", {"city": "Kyiv"})),
            ScriptedReply(text="never delivered", hang=True),
            reply_text("Snow in Kyiv."),
        )
        client = run.client
        session = await client.start_session(FLOW_TYPE, "Weather in Kyiv?")
        await asyncio.to_thread(run.model.wait_for_requests, run.first_request + 2, 60)
        dropped = run.model.dropped
        run.worker.kill()
        # The runner saw its caller go: it aborted its model call, whose request the server saw go.
        await asyncio.to_thread(run.model.wait_for_dropped, dropped + 1, 10)
        run.worker.start()
        snapshot = await client.wait_for(session, turns_done(1), timeout=60)

        assert service.poll() is None  # the same runner process throughout
        assert run.phases("get_weather") == ["started", "finished"]
        assert len(run.requests) == 3
        # The rerun sends what the killed attempt sent, rebuilt from the stored run state.
        assert run.requests[2].body == run.requests[1].body
        history = await client.get_step_history(session)
        assert [(s.step_type, s.attempts) for s in history] == [
            ("StartAgentSession", 1),
            ("RunModel", 1),
            ("CallTool", 1),
            ("ResumeTurn", 1),
            ("RunModel", 2),
            ("AwaitUserMessage", 0),  # waiting
        ]
        assert snapshot.messages[-1].text == "Snow in Kyiv."
