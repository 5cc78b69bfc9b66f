"""Fixtures for integration tests: a database per test (SQLite, and Postgres when
DEX_AGENTS_TEST_POSTGRES_URL is set), a scripted model, real Workers (dex_agents.testing)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from dex_agents.testing import MODEL_URL_ENV, ScriptedModelServer, ToolRunLog
from dex_agents.testing.harness import StepHarness

pytest_plugins = ["dex_agents.testing.fixtures"]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """`--dist loadfile` hands out the longest modules first (tests/scheduling.py)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from .scheduling import LongestFirst

    return LongestFirst(config, log)


@pytest.fixture
def worker_target() -> str:
    return "tests.apps.basic:flows"


@pytest.fixture
def worker_cwd() -> Path:
    return Path(__file__).parent.parent


@pytest.fixture
async def harness(
    database_url: str,
    model: ScriptedModelServer,
    tool_log: ToolRunLog,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[StepHarness]:
    """The flows of tests.apps.basic driven in this process (no Worker process): their model
    is `model`, their tools log to `tool_log`."""
    from tests.apps import basic

    monkeypatch.setenv(MODEL_URL_ENV, model.base_url)
    monkeypatch.setattr(basic, "LOG", tool_log)
    async with StepHarness(basic.flows, database_url) as step_harness:
        yield step_harness
