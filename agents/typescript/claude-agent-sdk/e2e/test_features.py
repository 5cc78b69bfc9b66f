"""The shared session-features suite (`dex_agents.testing.features`) on the Claude Agent SDK
runner, through a real Python Worker calling it in a real Node process (features_flows.py), the
real Claude Code CLI and the scripted Anthropic server: the built-ins (a question across a
Worker restart, a durable wait that outlives the Worker), plan mode and session settings.
Compaction is not offered by this runner (README, Session features): the suite skips that row
with the reason. The suite's MCP row runs with this runner's shapes
(`mcp_reads_run_in_tool_steps`): the read runs inside the CLI run, with the key its tool Step
would have had, and the approved refund in its tool Step, recorded as the model sees it
(`mcp__orders__orders__<tool>`).

With them, on the same Worker, the README's example as it is written (readme-example.ts): the
refund waits for approval, runs once in its tool Step, and the next turn's read sees it done.

The model sees the tools as `mcp__matrix__get_weather` and `mcp__dex__<built-in>`
(MODEL_NAMES); see `dex_agents.testing.anthropic_features`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import ClassVar

import pytest
from dex_agents.builtins import BUILT_IN_TOOL_NAMES
from dex_agents.testing.anthropic_features import AnthropicFeatureView, FeatureAnthropicServer
from dex_agents.testing.anthropic_server import anthropic_text, anthropic_tools, no_tools
from dex_agents.testing.features import (
    MCP_LOOKUP,
    MCP_REFUND,
    FeatureApp,
    FeatureSuite,
)
from dex_agents.testing.sessions import pending_interrupt, step_types, turns_done
from dex_agents.testing.shared_worker import SessionRun

MODEL_NAMES: Mapping[str, str] = {
    "get_weather": "mcp__matrix__get_weather",
    **{name: f"mcp__dex__{name}" for name in BUILT_IN_TOOL_NAMES},
    MCP_LOOKUP: f"mcp__orders__{MCP_LOOKUP}",
    MCP_REFUND: f"mcp__orders__{MCP_REFUND}",
}
"""The names the model sees for the tools the suite names."""

RESUME_PROMPT = "Continue."
"""The runner's prompt of a run that resumes a deferred call (src/texts.ts), not a user's text."""


class TestFeatures(FeatureSuite):
    app = FeatureApp(
        worker_target="features_flows:flows",
        worker_cwd=Path(__file__).resolve().parent,
        model_view=AnthropicFeatureView(runner_texts=[RESUME_PROMPT]),
    )
    supports_compaction: ClassVar[bool] = False
    unsupported_reason: ClassVar[str] = (
        "the Claude Code CLI compacts its own transcript (README, Session features)"
    )
    mcp_reads_run_in_tool_steps: ClassVar[bool] = False
    model_names: ClassVar[Mapping[str, str]] = MODEL_NAMES

    @pytest.fixture(scope="class")
    @classmethod
    def shared_model(cls, shared_database: str) -> Iterator[FeatureAnthropicServer]:
        with FeatureAnthropicServer(MODEL_NAMES, side=no_tools) as server:
            yield server

    async def test_the_readme_example_refunds_once_approved(self, run: SessionRun) -> None:
        model = run.model
        assert isinstance(model, FeatureAnthropicServer)
        model.enqueue(
            anthropic_tools(("toolu_1", "mcp__orders__refund", {"order_id": "o-42"})),
            anthropic_text("Refunded o-42."),
            anthropic_tools(("toolu_2", "mcp__orders__get_order", {"order_id": "o-42"})),
            anthropic_text("It is refunded."),
        )
        client, view = run.client, AnthropicFeatureView(runner_texts=[RESUME_PROMPT])
        session = await client.start_session("SupportAgent", "Refund o-42")
        await client.wait_for(session, pending_interrupt("toolu_1"))
        assert await client.resolve_interrupt(session, "toolu_1", approved=True)
        snapshot = await client.wait_for(session, turns_done(1))
        assert snapshot.messages[-1].text == "Refunded o-42."
        assert view.tool_outputs(run.requests[1]) == {"toolu_1": "refunded o-42"}
        assert view.instructions(run.requests[0]) == "You help customers."

        # The next turn's read runs in the CLI and sees the refund the tool Step made.
        assert await client.send_user_message(session, "Is it refunded?")
        snapshot = await client.wait_for(session, turns_done(2))
        assert snapshot.messages[-1].text == "It is refunded."
        assert view.tool_outputs(run.requests[3])["toolu_2"] == "order o-42: refunded"
        assert await step_types(client, session) == [
            "StartAgentSession",
            "RunModel",
            "AwaitToolApproval",
            "ResumeTurn",
            "CallSingleAttemptTool",
            "RunModel",
            "AwaitUserMessage",
            "RunModel",
            "AwaitUserMessage",
        ]
