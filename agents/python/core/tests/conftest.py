"""Fixtures for integration tests: a database per test, a scripted model, real Workers."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from dex_agents import AgentClient
from dex_agents.testing import MODEL_URL_ENV, ScriptedModelServer, ToolRunLog, WorkerProcess

TESTS = Path(__file__).parent
POSTGRES_URL = os.environ.get("DEX_AGENTS_TEST_POSTGRES_URL")
BACKENDS = ["sqlite"] + (["postgres"] if POSTGRES_URL else [])


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'dex.sqlite'}"
        return
    yield from _fresh_postgres_database(request.node.name)


def _fresh_postgres_database(test_name: str) -> Iterator[str]:
    import re
    import uuid

    import sqlalchemy as sa

    assert POSTGRES_URL
    name = "t_" + re.sub(r"\W", "_", test_name.lower())[:40] + "_" + uuid.uuid4().hex[:8]
    admin = sa.create_engine(
        POSTGRES_URL.replace("postgresql://", "postgresql+psycopg://"), isolation_level="AUTOCOMMIT"
    )
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    base = POSTGRES_URL.rsplit("/", 1)[0]
    try:
        yield f"{base}/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server


@pytest.fixture
def tool_log(tmp_path: Path) -> ToolRunLog:
    return ToolRunLog(tmp_path / "tools.jsonl")


@pytest.fixture
def make_worker(
    database_url: str, model: ScriptedModelServer, tool_log: ToolRunLog, tmp_path: Path
) -> Iterator[Callable[..., WorkerProcess]]:
    workers: list[WorkerProcess] = []

    def make(target: str = "tests.apps.basic:flows", **env: str) -> WorkerProcess:
        worker = WorkerProcess(
            target,
            database_url=database_url,
            cwd=TESTS.parent,
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
