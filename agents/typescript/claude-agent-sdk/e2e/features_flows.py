"""The Worker's flows for test_features.py: the matrix app's Node process serving the features
suite's `Features` (`dex_agents.testing.features`), and the README's example in a Node process
of its own serving `SupportAgent`, both started beside the Worker (`dex-agents worker
features_flows:flows`). `FeaturesMcp` takes the core's McpToolSource in the Node process, which
starts the MCP server itself. The runner takes no compaction policy (README, Session features),
so there is no `FeaturesCompaction` flow. The model sees the app's tools as
`mcp__matrix__<tool>`, so the tool policies are keyed by those names."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from dex_agents import AgentSessionOptions
from dex_agents.remote import remote_flow
from dex_agents.testing import MODEL_URL_ENV
from dex_agents.testing.features import (
    FLOW_TYPE,
    MCP_FLOW_TYPE,
    feature_mcp_options,
    feature_options,
)
from dex_agents.testing.node_runner import NodeRunner

BUILD = Path(__file__).resolve().parent.parent / "dist-test" / "e2e"


def options(given: AgentSessionOptions) -> AgentSessionOptions:
    policies = {f"mcp__matrix__{name}": p for name, p in given.tool_policies.items()}
    return dataclasses.replace(given, tool_policies=policies)


url = NodeRunner(BUILD / "matrix-app.js").url
# The README's example reads the model's endpoint from $ANTHROPIC_BASE_URL, as it says.
os.environ["ANTHROPIC_BASE_URL"] = os.environ[MODEL_URL_ENV]
readme_url = NodeRunner(BUILD / "readme-example.js").url
flows = [
    remote_flow(url, FLOW_TYPE, options(feature_options())),
    remote_flow(url, MCP_FLOW_TYPE, options(feature_mcp_options())),
    remote_flow(readme_url, "SupportAgent", AgentSessionOptions()),
]
