"""Fixtures: the shared ones of dex_agents.testing (a database per test, on SQLite and on
Postgres when DEX_AGENTS_TEST_POSTGRES_URL is set, a scripted model server, a tool-run log,
real Worker processes and a client), and this package's triage agent."""

from __future__ import annotations

from pathlib import Path

import pytest
from dex_agents.testing import RunnerDriver, ScriptedModelServer, ToolRunLog

from dex_agents_pydantic_ai import PydanticAiRunner

from .apps.agents import AppDeps, build_triage_agent, deps_factory, scripted_model

pytest_plugins = ["dex_agents.testing.fixtures"]


@pytest.fixture
def worker_target() -> str:
    return "tests.apps.triage:flows"


@pytest.fixture
def worker_cwd() -> Path:
    return Path(__file__).parent.parent


@pytest.fixture
def triage_runner(model: ScriptedModelServer, tool_log: ToolRunLog) -> PydanticAiRunner[AppDeps]:
    agent = build_triage_agent(scripted_model(model.base_url))
    return PydanticAiRunner(agent, deps_factory=deps_factory(tool_log.path))


@pytest.fixture
def driver(triage_runner: PydanticAiRunner[AppDeps]) -> RunnerDriver:
    return RunnerDriver(triage_runner)
