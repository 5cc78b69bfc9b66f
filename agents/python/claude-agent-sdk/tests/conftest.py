"""Fixtures: the shared ones of dex_agents.testing (a database per test, the scripted Anthropic
server, a tool-run log, real Worker processes and a client)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["dex_agents.testing.fixtures"]

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def worker_target() -> str:
    return "tests.apps.harness:flows"


@pytest.fixture
def worker_cwd() -> Path:
    return ROOT
