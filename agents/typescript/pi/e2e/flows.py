"""The Worker's flows for the matrix: the Pi app's Node runner, started beside the Worker (or
the one at $RUNNER_URL), served to it as remote flows (`dex-agents worker flows:flows`); see
`dex_agents.testing.node_runner`."""

from __future__ import annotations

from pathlib import Path

from dex_agents.testing.node_runner import node_runner_flows

APP = Path(__file__).resolve().parent.parent / "dist-test" / "e2e" / "matrix-app.js"
flows = node_runner_flows(APP)
