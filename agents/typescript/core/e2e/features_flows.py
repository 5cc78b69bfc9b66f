"""The Worker's flows for the features suite (`dex_agents.testing.features`): the same Node
app, started beside the Worker, serving `Features` and `FeaturesCompaction` as remote flows
(`dex-agents worker features_flows:flows`). The app has no MCP tool source, so there is no
`FeaturesMcp` flow."""

from __future__ import annotations

from pathlib import Path

from dex_agents.remote import remote_flow
from dex_agents.testing.features import (
    COMPACTION_FLOW_TYPE,
    FLOW_TYPE,
    feature_compaction_options,
    feature_options,
)
from dex_agents.testing.node_runner import NodeRunner

APP = Path(__file__).resolve().parent.parent / "build" / "e2e" / "matrix-app.js"
url = NodeRunner(APP).url
flows = [
    remote_flow(url, FLOW_TYPE, feature_options()),
    remote_flow(url, COMPACTION_FLOW_TYPE, feature_compaction_options()),
]
