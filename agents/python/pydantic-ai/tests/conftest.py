"""Fixtures: a scripted model server, a tool-run log, and for Worker tests a database per
test, real Worker processes and a client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from dex_agents import AgentClient
from dex_agents.testing import MODEL_URL_ENV, ScriptedModelServer, ToolRunLog, WorkerProcess

from dex_agents_pydantic_ai import PydanticAiRunner

from .apps.agents import AppDeps, build_triage_agent, deps_factory, scripted_model
from .driver import Driver

PACKAGE = Path(__file__).parent.parent


@pytest.fixture
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server


@pytest.fixture
def tool_log(tmp_path: Path) -> ToolRunLog:
    return ToolRunLog(tmp_path / "tools.jsonl")


@pytest.fixture
def triage_runner(model: ScriptedModelServer, tool_log: ToolRunLog) -> PydanticAiRunner[AppDeps]:
    agent = build_triage_agent(scripted_model(model.base_url))
    return PydanticAiRunner(agent, deps_factory=deps_factory(tool_log.path))


@pytest.fixture
def driver(triage_runner: PydanticAiRunner[AppDeps]) -> Driver:
    return Driver(triage_runner)


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'dex.sqlite'}"


@pytest.fixture
def make_worker(
    database_url: str, model: ScriptedModelServer, tool_log: ToolRunLog, tmp_path: Path
) -> Iterator[Callable[..., WorkerProcess]]:
    workers: list[WorkerProcess] = []

    def make(**env: str) -> WorkerProcess:
        worker = WorkerProcess(
            "tests.apps.triage:flows",
            database_url=database_url,
            cwd=PACKAGE,
            env={MODEL_URL_ENV: model.base_url, "TOOL_LOG": str(tool_log.path), **env},
            log_path=tmp_path / f"worker-{len(workers)}.log",
        )
        workers.append(worker)
        return worker

    yield make
    for worker in workers:
        worker.kill()


@pytest.fixture
async def client(database_url: str) -> AsyncIterator[AgentClient]:
    agent_client = AgentClient(database_url)
    yield agent_client
    await agent_client.close()
