"""Fixtures: the shared ones of dex_agents.testing (a database per test, on SQLite and on
Postgres when DEX_AGENTS_TEST_POSTGRES_URL is set, a scripted model server, a tool-run log,
real Worker processes and a client), and a RunConfig whose client talks to the model server."""

from __future__ import annotations

from pathlib import Path

import pytest
from agents import RunConfig, set_tracing_disabled
from dex_agents.testing import ScriptedModelServer

from .apps.scripted import scripted_run_config

# The SDK would export traces to OpenAI; these tests have no key and no internet.
set_tracing_disabled(True)

pytest_plugins = ["dex_agents.testing.fixtures"]


@pytest.fixture
def worker_target() -> str:
    return "tests.apps.support:flows"


@pytest.fixture
def worker_cwd() -> Path:
    return Path(__file__).parent.parent


@pytest.fixture
def server(model: ScriptedModelServer) -> ScriptedModelServer:
    return model


@pytest.fixture
def run_config(server: ScriptedModelServer) -> RunConfig:
    return scripted_run_config(server.base_url, max_retries=0)
