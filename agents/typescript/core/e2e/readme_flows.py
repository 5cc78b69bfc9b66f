"""The Worker's flow for the README's Stepwise example (readme-example.ts): the example's Node
process started beside the Worker, its `Assistant` served as a remote flow with the options of
the README's flows.toml (`dex-agents worker readme_flows:flows`)."""

from __future__ import annotations

from pathlib import Path

from dex_agents import AgentSessionOptions
from dex_agents.remote import remote_flow
from dex_agents.testing.node_runner import NodeRunner

APP = Path(__file__).resolve().parent.parent / "build" / "e2e" / "readme-example.js"
url = NodeRunner(APP).url
flows = [
    remote_flow(
        url,
        "Assistant",
        AgentSessionOptions(
            built_in_tools=("ask_user", "durable_wait", "write_todos"), plan_mode_enabled=True
        ),
    )
]
