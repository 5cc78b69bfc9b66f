"""pytest fixtures for integration tests of dex-agents flows, shared by the core and adapters.

    # tests/conftest.py
    pytest_plugins = ["dex_agents.testing.fixtures"]

- `database_url`: a fresh database per test, SQLite and, when `DEX_AGENTS_TEST_POSTGRES_URL`
  names a Postgres server, Postgres too (a new database per test, dropped after it);
- `model`: a `ScriptedModelServer` on loopback; `anthropic_model`: a
  `ScriptedAnthropicServer` (the Anthropic Messages API) on loopback; `tool_log`: a `ToolRunLog`;
- `client`: an `AgentClient` on `database_url`;
- `make_worker(target=None, **env)`: a `WorkerProcess` on `database_url`, its model pointed at
  `model` and its tools at `tool_log`, killed after the test. Its default target and working
  directory come from the `worker_target` and `worker_cwd` fixtures, which a conftest defines.

Tests run in parallel under pytest-xdist's `--dist loadfile` (scripts/test.sh), each pytest
process with its own databases, servers on free ports and files under its own tmp_path. A test
module runs whole in one process, so a fixture it shares wider than a test (a module's server,
a class's `SharedWorkerSuite` Worker, an npm install) starts once.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from ..client import AgentClient
from ..db import normalize_url
from .anthropic_server import ScriptedAnthropicServer, no_tools
from .model_server import ScriptedModelServer
from .processes import WorkerProcess
from .scripted_runner import MODEL_URL_ENV
from .tool_log import ToolRunLog

# The shared suites' failures show the values they compared, as a test module's do: their
# modules are rewritten like test modules (the test modules import them after this plugin).
pytest.register_assert_rewrite(
    "dex_agents.testing.features",
    "dex_agents.testing.matrix",
    "dex_agents.testing.mcp_source",
    "dex_agents.testing.node_runner",
    "dex_agents.testing.shared_worker",
    "dex_agents.testing.warm",
)

POSTGRES_URL_ENV = "DEX_AGENTS_TEST_POSTGRES_URL"
POSTGRES_URL = os.environ.get(POSTGRES_URL_ENV)
BACKENDS = ["sqlite"] + (["postgres"] if POSTGRES_URL else [])


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'dex.sqlite'}"
        return
    yield from fresh_postgres_database(request.node.name)


def fresh_postgres_database(test_name: str) -> Iterator[str]:
    """A new database on the test Postgres server (DEX_AGENTS_TEST_POSTGRES_URL), named after
    the test, dropped when the generator closes: for a fixture of any scope."""
    assert POSTGRES_URL
    name = "t_" + re.sub(r"\W", "_", test_name.lower())[:40] + "_" + uuid.uuid4().hex[:8]
    admin = sa.create_engine(normalize_url(POSTGRES_URL), isolation_level="AUTOCOMMIT")
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
def anthropic_model() -> Iterator[ScriptedAnthropicServer]:
    """Requests that offer no tools (a client's own side calls) do not consume the script."""
    with ScriptedAnthropicServer(side=no_tools) as server:
        yield server


@pytest.fixture
def tool_log(tmp_path: Path) -> ToolRunLog:
    return ToolRunLog(tmp_path / "tools.jsonl")


@pytest.fixture
async def client(database_url: str) -> AsyncIterator[AgentClient]:
    agent_client = AgentClient(database_url)
    yield agent_client
    await agent_client.close()


@pytest.fixture
def worker_target() -> str:
    raise pytest.UsageError("define a worker_target fixture (module:attribute) in conftest.py")


@pytest.fixture
def worker_cwd() -> Path:
    return Path.cwd()


@pytest.fixture
def make_worker(
    database_url: str,
    model: ScriptedModelServer,
    tool_log: ToolRunLog,
    tmp_path: Path,
    worker_target: str,
    worker_cwd: Path,
) -> Iterator[Callable[..., WorkerProcess]]:
    workers: list[WorkerProcess] = []

    def make(target: str | None = None, **env: str) -> WorkerProcess:
        worker = WorkerProcess(
            target or worker_target,
            database_url=database_url,
            cwd=worker_cwd,
            env={MODEL_URL_ENV: model.base_url, "TOOL_LOG": str(tool_log.path), **env},
            log_path=tmp_path / f"worker-{len(workers)}.log",
        )
        workers.append(worker)
        return worker

    yield make
    for worker in workers:
        worker.kill()
