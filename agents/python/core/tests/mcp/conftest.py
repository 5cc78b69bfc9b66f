from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .servers import HttpServerProcess, RunLog


@pytest.fixture
def run_log(tmp_path: Path) -> RunLog:
    return RunLog(tmp_path / "mcp-runs.jsonl")


@pytest.fixture
def http_server(run_log: RunLog) -> Iterator[HttpServerProcess]:
    server = HttpServerProcess(run_log).start()
    yield server
    server.stop()
