"""The remote runner tests' scripted runner server, serving one flow type (FLOW)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dex_agents.testing.remote_runner_server import ScriptedRunnerServer

FLOW = "TriageAgent"


@pytest.fixture
def runner() -> Iterator[ScriptedRunnerServer]:
    with ScriptedRunnerServer([FLOW]) as server:
        yield server
