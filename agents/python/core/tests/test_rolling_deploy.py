"""A rolling deploy loses nothing: two Workers on Postgres under steady load (sessions in
turns, single-attempt writes running, approvals waiting with messages queued behind them)
are replaced one at a time by SIGTERM and a new process, as an orchestrator does it.

Each replacement stops its Worker while a write runs on it. Every turn must complete with
its own answer, every write run once and be recorded as written (never `outcome_unknown`),
every model call run once, every Worker exit cleanly within the grace period
docs/deployment.md gives, and every session answer a turn after the deploy.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

from dex_agents import AgentClient
from dex_agents.testing import ToolRunLog, WorkerProcess
from dex_agents.testing.fixtures import POSTGRES_URL, fresh_postgres_database

from .helpers import no_failed_workflows, pending_interrupt, turns_done, wait_until
from .routed_model import RoutedModelServer

# What docs/deployment.md tells an orchestrator to give a Worker between SIGTERM and SIGKILL.
GRACE_SECONDS = 30.0
# A short hot window: some waits park during the deploy, others are hot when it stops them.
WORKER_ENV = {"DEX_AGENTS_HOT_WINDOW_SECONDS": "2"}


@pytest.fixture
def database_url(request: pytest.FixtureRequest) -> Iterator[str]:
    if not POSTGRES_URL:
        pytest.skip(
            "a rolling deploy of Workers is tested on Postgres: set DEX_AGENTS_TEST_POSTGRES_URL"
        )
    yield from fresh_postgres_database(request.node.name)


@pytest.fixture
def model() -> Iterator[RoutedModelServer]:
    with RoutedModelServer() as server:
        yield server


class Load:
    """Sessions that run one turn after another until told to stop, keeping every result."""

    def __init__(self, client: AgentClient) -> None:
        self.client = client
        self.stop = asyncio.Event()
        self.results: list[tuple[str, str, str | None]] = []  # (message, status, text)
        self.tasks: list[asyncio.Task[None]] = []

    async def start(self, label: str) -> str:
        session = await self.client.start_session("Assistant")
        self.tasks.append(asyncio.create_task(self._turns(session, label)))
        return session

    async def _turns(self, session: str, label: str) -> None:
        turn = 0
        while not self.stop.is_set():
            turn += 1
            message = f"{label} {turn}"
            result = await self.client.run_turn(session, message, timeout=90)
            self.results.append((message, result.status, result.text))

    def turns(self, prefix: str) -> int:
        return sum(1 for message, *_ in self.results if message.startswith(prefix))

    async def finish(self) -> None:
        self.stop.set()
        await asyncio.gather(*self.tasks)


def _write_running_on(tool_log: ToolRunLog, worker: WorkerProcess) -> bool:
    assert worker.process is not None
    phases = [e["phase"] for e in tool_log.entries("slow_write") if e["pid"] == worker.process.pid]
    return phases.count("started") > phases.count("finished")


async def _stop_while_writing(worker: WorkerProcess, tool_log: ToolRunLog) -> None:
    """SIGTERM to `worker` while a write runs on it; it must exit cleanly within the grace."""
    await asyncio.to_thread(
        wait_until, lambda: _write_running_on(tool_log, worker), 30, "a write to run on it"
    )
    await asyncio.to_thread(worker.stop, GRACE_SECONDS)
    assert worker.process is not None and worker.process.returncode == 0, worker.log()
    assert "Traceback" not in worker.log() and "still running" not in worker.log(), worker.log()


async def test_replacing_each_worker_in_turn_fails_no_turn_and_loses_no_write(
    make_worker, model, client, tool_log, database_url
):
    first = [make_worker(DEX_AGENTS_WORKER_ID=f"old-{n}", **WORKER_ENV) for n in "ab"]
    await asyncio.gather(*(asyncio.to_thread(w.start) for w in first))
    # Approvals that wait through the whole deploy, with a message queued behind two of them.
    waiting = []
    for n in range(3):
        session = await client.start_session("Assistant", f"email {n}")
        waiting.append(session)
    for n, session in enumerate(waiting):
        await client.wait_for(session, pending_interrupt(f"email-{n}"))
        if n < 2:
            assert await client.send_user_message(session, f"queued {n}")
    load = Load(client)
    # Mostly writes, so that each Worker runs some whichever sessions it holds.
    sessions = [await load.start(f"chat {n}") for n in range(2)]
    sessions += [await load.start(f"write {n}") for n in range(6)]
    await asyncio.to_thread(wait_until, lambda: load.turns("write") >= 6, 60, "writes to run")

    # The first Worker is replaced as it stops (its replacement starts meanwhile), the second
    # only once its replacement runs (a surge).
    new_a, new_b = (make_worker(DEX_AGENTS_WORKER_ID=f"new-{n}", **WORKER_ENV) for n in "ab")
    surge = asyncio.ensure_future(asyncio.to_thread(new_b.start))
    await asyncio.gather(_stop_while_writing(first[0], tool_log), asyncio.to_thread(new_a.start))
    # One approval is resolved between the two replacements.
    assert await client.resolve_interrupt(waiting[0], "email-0", approved=True)
    await surge
    await _stop_while_writing(first[1], tool_log)
    turns_at_deploy_end = len(load.results)
    await asyncio.to_thread(
        wait_until, lambda: len(load.results) >= turns_at_deploy_end + 6, 60, "more turns"
    )
    await load.finish()
    for n, session in enumerate(waiting[1:], start=1):
        assert await client.resolve_interrupt(session, f"email-{n}", approved=True)

    # Every session answers after the deploy, the approvals' queued messages first.
    for n, session in enumerate(waiting):
        await client.wait_for(session, turns_done(2 if n < 2 else 1), timeout=60)
    for n, session in enumerate(waiting + sessions):
        after = await client.run_turn(session, f"after {n}", timeout=60)
        assert (after.status, after.text) == ("completed", f"echo: after {n}")

    # Every turn of the load completed with its own answer; no write's outcome is unknown.
    for message, status, text in load.results:
        expected = "done: written" if message.startswith("write") else f"echo: {message}"
        assert (status, text) == ("completed", expected), message
    writes = tool_log.entries("slow_write")
    assert [e["phase"] for e in writes].count("started") == load.turns("write")
    assert [e["phase"] for e in writes].count("finished") == load.turns("write")
    assert tool_log.count("send_email") == 3
    for n, session in enumerate(waiting):
        snapshot = await client.get_agent_snapshot(session)
        texts = [m.text for m in snapshot.messages if m.role == "assistant" and m.text]
        assert texts[0] == "done: sent to ana@example.com"
        if n < 2:
            assert texts[1] == f"echo: queued {n}"
    # Each model call ran once: no attempt was cut off and begun again on another Worker.
    attempts = 0
    for session in waiting + sessions:
        for step in await client.get_step_history(session):
            assert step.step_type != "RecordToolOutcomeUnknown", session
            if step.step_type in ("RunModel", "CallSingleAttemptTool"):
                assert (step.status, step.attempts) == ("succeeded", 1), step
                attempts += step.step_type == "RunModel"
        assert no_failed_workflows(database_url, session)
    assert attempts == len(model.requests)
    print(json.dumps({"turns": len(load.results), "model_calls": attempts}))
