"""What the web tests share: per module and database backend, one database, one scripted
model, one Worker (tests.apps.web) and one `dex-agents serve` process."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from dex_agents.testing import (
    MODEL_URL_ENV,
    ScriptedModelServer,
    ServeProcess,
    ToolRunLog,
    WorkerProcess,
)
from dex_agents.testing.fixtures import BACKENDS, fresh_postgres_database

TESTS_ROOT = Path(__file__).parent.parent.parent


@pytest.fixture(scope="module", params=BACKENDS)
def db_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('web') / 'dex.sqlite'}"
        return
    yield from fresh_postgres_database(request.module.__name__.rsplit(".", 1)[-1])


@pytest.fixture(scope="module")
def scripted_model(db_url: str) -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server


@pytest.fixture(scope="module")
def tools(db_url: str, tmp_path_factory: pytest.TempPathFactory) -> ToolRunLog:
    return ToolRunLog(tmp_path_factory.mktemp("tools") / "tools.jsonl")


@pytest.fixture(scope="module")
def worker(
    db_url: str, scripted_model: ScriptedModelServer, tools: ToolRunLog
) -> Iterator[WorkerProcess]:
    env = {MODEL_URL_ENV: scripted_model.base_url, "TOOL_LOG": str(tools.path)}
    with WorkerProcess("tests.apps.web:flows", database_url=db_url, cwd=TESTS_ROOT, env=env) as w:
        yield w


@pytest.fixture(scope="module")
def server(db_url: str, worker: WorkerProcess) -> Iterator[ServeProcess]:
    with ServeProcess(db_url, env={"DEX_AGENTS_WEB_HEARTBEAT_SECONDS": "0.3"}) as serve:
        yield serve


@pytest.fixture
async def http(server: ServeProcess) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        base_url=server.base_url, headers=server.headers, timeout=60.0
    ) as client:
        yield client
