"""A fresh ADK Worker warms its runner up before it reports ready: through a real Worker
process whose environment leaves LITELLM_LOCAL_MODEL_COST_MAP unset and sends HTTPS through a
proxy port that refuses connections (a fetch would fail and be recorded as the fallback's
reason). The warm-up is logged before the Worker's ready line, and LiteLLM in the Worker read
its bundled cost map because the adapter told it to, attempting no fetch."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from dex_agents import AgentClient
from dex_agents.testing import (
    ScriptedModelServer,
    WorkerProcess,
    reply_text,
    reply_tools,
    turns_done,
)

from .adk_view import adk_chat_completions


@pytest.fixture
def database_url(tmp_path: Path) -> Iterator[str]:
    """SQLite only: the warm-up does not depend on the backend."""
    yield f"sqlite:///{tmp_path / 'dex.sqlite'}"


@pytest.fixture
def worker_target() -> str:
    return "tests.apps.warm_up:flows"


@pytest.fixture
def worker_cwd() -> Path:
    return Path(__file__).parent.parent


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_the_worker_warms_up_before_ready_and_litellm_fetches_nothing(
    make_worker: Callable[..., WorkerProcess], model: ScriptedModelServer, client: AgentClient
) -> None:
    proxy = f"http://127.0.0.1:{_closed_port()}"
    model.enqueue(reply_tools(("c1", "cost_map_source", {})), reply_text("Local."))
    with make_worker(
        LITELLM_LOCAL_MODEL_COST_MAP="", HTTPS_PROXY=proxy, https_proxy=proxy
    ) as worker:
        log = worker.log()
        session = await client.start_session("WarmUp", "Where is the cost map from?")
        await client.wait_for(session, turns_done(1), timeout=60)

    warmed = log.find("AdkRunner warmed up in")
    assert warmed != -1, log
    assert -1 < warmed < log.find("hosts WarmUp"), log
    source = json.loads(adk_chat_completions.tool_outputs(model.requests[1])["c1"])
    assert source == {
        "source": "local",
        "url": None,
        "is_env_forced": True,
        "fallback_reason": None,
    }
