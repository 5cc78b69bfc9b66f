"""The adapters' spec matrix (dex_agents.testing.matrix) through a real Python Worker that calls
the Vercel AI SDK runner in a real Node process (flows.py), on SQLite and on Postgres; then
what only a runner in its own process can do: die alone, be aborted, restart with no cache.

The matrix's kill tests SIGKILL the Worker's process group, the Node runner with it. The tests
below SIGKILL the Node runner alone; the Worker starts it again (flows.py) and writes its PID
to $RUNNER_PID_FILE. `TestRunnerOfItsOwn` serves the runner from a process the tests start,
as a separate service, and SIGKILLs the Worker alone.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from dex_agents import texts
from dex_agents.testing.matrix import (
    FLOW_TYPE,
    MatrixApp,
    MatrixRun,
    MatrixSuite,
    chat_completions,
)
from dex_agents.testing.model_server import (
    ScriptedModelServer,
    ScriptedReply,
    reply_text,
    reply_tools,
)
from dex_agents.testing.scripted_runner import MODEL_URL_ENV
from dex_agents.testing.sessions import events_of, turns_done, wait_until
from dex_agents.testing.shared_worker import SharedWorkerSuite, WorkerApp
from dex_agents.testing.tool_log import ToolRunLog

APP = Path(__file__).resolve().parent.parent / "dist-test" / "e2e" / "matrix-app.js"
RUNNER_PID_FILE = Path(tempfile.gettempdir()) / f"dex-vercel-e2e-runner-{os.getpid()}.pid"


def runner_pid() -> int:
    return int(RUNNER_PID_FILE.read_text())


def kill_runner() -> int:
    """SIGKILLs the Node runner alone; returns the PID it had."""
    pid = runner_pid()
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: runner_pid() != pid, what="the Worker to start the runner again")
    return pid


class TestMatrix(MatrixSuite):
    app = MatrixApp(
        worker_target="flows:flows",
        worker_cwd=Path(__file__).parent,
        model_view=chat_completions,
        worker_env={"RUNNER_PID_FILE": str(RUNNER_PID_FILE)},
    )

    async def test_a_runner_killed_in_a_single_attempt_write_leaves_it_outcome_unknown(
        self, run: MatrixRun
    ) -> None:
        run.model.enqueue(
            reply_tools(("c1", "charge_card", {"amount": 40, "seconds": 60})),
            reply_text("The charge may or may not have gone through."),
        )
        client = run.client
        session = await client.start_session(FLOW_TYPE, "Charge 40.")
        wait_until(lambda: run.phases("charge_card") == ["started"], what="the charge to start")
        killed = kill_runner()
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
        self, run: MatrixRun
    ) -> None:
        dropped = run.model.dropped
        run.model.enqueue(ScriptedReply(text="never delivered", hang=True), reply_text("Next."))
        client = run.client
        session = await client.start_session(FLOW_TYPE, "Write an essay.")
        await asyncio.to_thread(run.model.wait_for_requests, run.first_request + 1, 30)
        assert await client.cancel_turn(session)
        await client.wait_for(session, turns_done(1), timeout=30)
        # The runner aborted its streamText: the model server saw its request go away.
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

    async def test_a_restarted_runner_asks_for_the_history_it_lost(self, run: MatrixRun) -> None:
        run.model.enqueue(reply_text("Kyiv is cold."), reply_text("Pack a coat."))
        client = run.client
        first = await client.start_session_and_wait(FLOW_TYPE, "How is Kyiv?", timeout=30)
        assert first.text == "Kyiv is cold."
        kill_runner()
        assert await client.send_user_message(first.session_id, "What should I pack?")
        snapshot = await client.wait_for(first.session_id, turns_done(2), timeout=60)

        assert snapshot.messages[-1].text == "Pack a coat."
        # The new process holds no message of the session: it asked the Worker for them all,
        # and the model saw the first turn.
        assert run.user_texts(1) == ["How is Kyiv?", "What should I pack?"]
        second = run.requests[1].body["messages"]
        assert {"role": "assistant", "content": "Kyiv is cold."}.items() <= next(
            m for m in second if m["role"] == "assistant"
        ).items()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


SERVICE_PORT = _free_port()


class TestRunnerOfItsOwn(SharedWorkerSuite):
    app = WorkerApp(
        worker_target="flows:flows",
        worker_cwd=Path(__file__).parent,
        model_view=chat_completions,
        worker_env={"RUNNER_URL": f"http://127.0.0.1:{SERVICE_PORT}/dex"},
    )

    @pytest.fixture(scope="class", autouse=True)
    @classmethod
    def service(
        cls, shared_model: ScriptedModelServer, shared_tool_log: ToolRunLog
    ) -> Iterator[subprocess.Popen[str]]:
        """The Node runner, started before the Worker (autouse) and outliving its kills."""
        process = subprocess.Popen(
            ["node", str(APP)],
            env={
                **os.environ,
                "PORT": str(SERVICE_PORT),
                MODEL_URL_ENV: shared_model.base_url,
                "TOOL_LOG": str(shared_tool_log.path),
            },
            stdout=subprocess.PIPE,
            text=True,
        )
        assert process.stdout is not None
        assert process.stdout.readline().startswith("runners at ")
        yield process
        process.kill()
        process.wait()

    async def test_a_worker_killed_in_run_model_reruns_it_against_the_same_runner(
        self, run: MatrixRun, service: subprocess.Popen[str]
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
        # The runner saw its caller go: it aborted streamText, whose request the server saw go.
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
