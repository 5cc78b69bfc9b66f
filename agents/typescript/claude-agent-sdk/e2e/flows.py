"""The Worker's flows for the end-to-end tests: the matrix app's Node runner, started beside the
Worker (or the one at $RUNNER_URL), served to it as remote flows (`dex-agents worker
flows:flows`); see `dex_agents.testing.node_runner`. The model sees the tools as
`mcp__matrix__<tool>`, so the matrix's tool policies are keyed by those names."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

from dex_agents import AgentSessionOptions
from dex_agents.remote import remote_flow
from dex_agents.testing.claude_matrix import model_name
from dex_agents.testing.matrix import CLIENT_RETRIES_FLOW_TYPE, DEADLINE_FLOW_TYPE, FLOW_TYPE
from dex_agents.testing.matrix_app import matrix_options
from dex_agents.testing.node_runner import RUNNER_URL_ENV, NodeRunner

APP = Path(__file__).resolve().parent.parent / "dist-test" / "e2e" / "matrix-app.js"


def options(deadline: timedelta | None = None) -> AgentSessionOptions:
    return matrix_options(deadline, model_name)


url = os.environ.get(RUNNER_URL_ENV) or NodeRunner(APP).url
flows = [
    remote_flow(url, FLOW_TYPE, options()),
    remote_flow(url, DEADLINE_FLOW_TYPE, options(timedelta(seconds=1))),
    remote_flow(url, CLIENT_RETRIES_FLOW_TYPE, options()),
]
