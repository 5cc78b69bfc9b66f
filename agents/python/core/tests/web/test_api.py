"""The session HTTP API through a real `dex-agents serve` process and a real Worker process, on
SQLite and Postgres: RPCs, the snapshot's resume token, Server-Sent Events, auth, bad input."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from dex_agents.testing import (
    MODEL_URL_ENV,
    ScriptedModelServer,
    ServeProcess,
    ToolRunLog,
    WorkerProcess,
)
from dex_agents.testing.fixtures import BACKENDS, _fresh_postgres_database

TESTS_ROOT = Path(__file__).parent.parent.parent
STEP_ONLY_FIELDS = {
    "framework_item",
    "tool_source_reference",
    "trace_context",
    "input_continuation",
    "input_answers",
    "task_answer_pending",
}


# One database, model, Worker and server per module and backend ------------------------------


@pytest.fixture(scope="module", params=BACKENDS)
def db_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('web') / 'dex.sqlite'}"
        return
    yield from _fresh_postgres_database("web_api")


@pytest.fixture(scope="module")
def scripted_model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> ToolRunLog:
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
    env = {"DEX_AGENTS_WEB_HEARTBEAT_SECONDS": "0.3"}
    with ServeProcess(db_url, env=env) as serve:
        yield serve


@pytest.fixture
async def http(server: ServeProcess) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        base_url=server.base_url, headers=server.headers, timeout=30.0
    ) as client:
        yield client


# Helpers ------------------------------------------------------------------------------------


async def start(http: httpx.AsyncClient, message: str | None, **body: Any) -> str:
    response = await http.post(
        "/api/sessions", json={"flow_type": "Assistant", "message": message, **body}
    )
    assert response.status_code == 201, response.text
    session_id: str = response.json()["session_id"]
    return session_id


async def snapshot(http: httpx.AsyncClient, session_id: str) -> dict[str, Any]:
    response = await http.get(f"/api/sessions/{session_id}/snapshot")
    assert response.status_code == 200, response.text
    value: dict[str, Any] = response.json()
    return value


async def wait_for(
    http: httpx.AsyncClient,
    session_id: str,
    predicate: Callable[[dict[str, Any]], bool],
    timeout: float = 30.0,
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        snap = await snapshot(http, session_id)
        if predicate(snap):
            return snap
        if time.monotonic() > deadline:
            raise TimeoutError(f"session {session_id} did not get there: {snap['state']}")
        await _sleep(0.05)


async def _sleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)


def turns_done(count: int) -> Callable[[dict[str, Any]], bool]:
    return lambda s: (
        s["state"] is not None
        and s["state"]["turn_count"] >= count
        and s["state"]["status"] == "waiting_for_user_message"
    )


def interrupt_pending(interrupt_id: str) -> Callable[[dict[str, Any]], bool]:
    return lambda s: any(i["interrupt_id"] == interrupt_id for i in s["pending_interrupts"])


def keys_anywhere(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in keys_anywhere(v)}
    if isinstance(value, list):
        return {k for v in value for k in keys_anywhere(v)}
    return set()


# The server process ---------------------------------------------------------------------------


def test_serve_process_answers_with_its_token_and_the_workers(server: ServeProcess) -> None:
    response = httpx.get(f"{server.base_url}/api/workers", headers=server.headers)
    assert response.status_code == 200
    assert [w["state"] for w in response.json()] == ["running"]
    assert "Assistant" in response.json()[0]["flow_types"]
    assert server.process is not None and server.process.poll() is None
