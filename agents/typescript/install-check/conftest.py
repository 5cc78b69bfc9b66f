"""Fixtures: the shared ones of dex_agents.testing (the scripted model server, real Worker
processes, a client), on SQLite only: what is checked here is how the packages install, which
the database does not change (every package's own e2e runs on Postgres too)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest_plugins = ["dex_agents.testing.fixtures"]


@pytest.fixture
def database_url(tmp_path: Path) -> Iterator[str]:
    yield f"sqlite:///{tmp_path / 'dex.sqlite'}"


@pytest.fixture
def worker_target() -> str:
    return "flows:flows"


@pytest.fixture
def worker_cwd() -> Path:
    return Path(__file__).resolve().parent
