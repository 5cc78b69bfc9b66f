"""Fixtures for integration tests: a database per test (SQLite, and Postgres when
DEX_AGENTS_TEST_POSTGRES_URL is set), a scripted model, real Workers (dex_agents.testing)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["dex_agents.testing.fixtures"]


@pytest.fixture
def worker_target() -> str:
    return "tests.apps.basic:flows"


@pytest.fixture
def worker_cwd() -> Path:
    return Path(__file__).parent.parent
