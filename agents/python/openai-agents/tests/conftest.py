from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from agents import RunConfig, set_tracing_disabled
from agents.models.openai_provider import OpenAIProvider
from dex_agents import AgentClient
from dex_agents.testing import MODEL_URL_ENV, ScriptedModelServer, ToolRunLog, WorkerProcess
from openai import AsyncOpenAI

# The SDK would export traces to OpenAI; these tests have no key and no internet.
set_tracing_disabled(True)

PACKAGE = Path(__file__).parent.parent
APP = "tests.apps.support:flows"


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as model_server:
        yield model_server


@pytest.fixture
def model(server: ScriptedModelServer) -> ScriptedModelServer:
    return server


@pytest.fixture
def run_config(server: ScriptedModelServer) -> RunConfig:
    client = AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    return RunConfig(model_provider=OpenAIProvider(openai_client=client))


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'dex.sqlite'}"


@pytest.fixture
def tool_log(tmp_path: Path) -> ToolRunLog:
    return ToolRunLog(tmp_path / "tools.jsonl")


@pytest.fixture
def make_worker(
    database_url: str, model: ScriptedModelServer, tool_log: ToolRunLog, tmp_path: Path
) -> Iterator[Callable[..., WorkerProcess]]:
    workers: list[WorkerProcess] = []

    def make(**env: str) -> WorkerProcess:
        worker = WorkerProcess(
            APP,
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
