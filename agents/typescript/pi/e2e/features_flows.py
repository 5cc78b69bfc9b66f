"""The Worker's flows for test_features.py: the Pi app's Node process serving the features
suite's `Features`, `FeaturesCompaction` and `FeaturesMcp` (`dex_agents.testing.features`),
and the README's example in a Node process of its own serving `Assistant` with the options of
the README's flows.toml, both started beside the Worker (`dex-agents worker
features_flows:flows`). The MCP server of `FeaturesMcp` is started by the Node runner (the
core's McpToolSource), not by the Worker."""

from __future__ import annotations

from pathlib import Path

from dex_agents import AgentSessionOptions
from dex_agents.remote import remote_flow
from dex_agents.testing.features import (
    BUILT_INS,
    COMPACTION_FLOW_TYPE,
    FLOW_TYPE,
    MCP_FLOW_TYPE,
    feature_compaction_options,
    feature_mcp_options,
    feature_options,
)
from dex_agents.testing.node_runner import NodeRunner

BUILD = Path(__file__).resolve().parent.parent / "dist-test" / "e2e"
url = NodeRunner(BUILD / "matrix-app.js").url
readme_url = NodeRunner(BUILD / "readme-example.js").url
flows = [
    remote_flow(url, FLOW_TYPE, feature_options()),
    remote_flow(url, COMPACTION_FLOW_TYPE, feature_compaction_options()),
    remote_flow(url, MCP_FLOW_TYPE, feature_mcp_options()),
    remote_flow(
        readme_url,
        "Assistant",
        AgentSessionOptions(built_in_tools=BUILT_INS, plan_mode_enabled=True),
    ),
]
