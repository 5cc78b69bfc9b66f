"""The shared session-features suite (`dex_agents.testing.features`) on the Claude Agent SDK
runner, through a real Python Worker calling it in a real Node process (features_flows.py), the
real Claude Code CLI and the scripted Anthropic server: the built-ins (a question across a
Worker restart, a durable wait that outlives the Worker), plan mode and session settings.
Compaction is not offered by this runner (README, Session features): the suite skips that row
with the reason. The suite's MCP row expects the read in a `CallTool` Step and the calls recorded
under the source's own names; here the read runs inside the CLI run and the calls are recorded
as the model sees them (`mcp__orders__orders__<tool>`), so the row is skipped and
`test_an_mcp_read_in_the_cli_and_an_approved_mcp_write_carry_the_idempotency_key` runs its
scenario with this runner's shapes: the same tool runs, keys and results.

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
    MCP_FLOW_TYPE,
    MCP_LOOKUP,
    MCP_REFUND,
    FeatureApp,
    FeatureSuite,
)
from dex_agents.testing.model_server import reply_text, reply_tools
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
    supports_mcp: ClassVar[bool] = False
    unsupported_reason: ClassVar[str] = (
        "the Claude Code CLI compacts its own transcript (README, Session features); an MCP "
        "read runs inside the CLI run, not in a CallTool Step, and the calls are recorded as "
        "the model sees them: test_an_mcp_read_in_the_cli_... runs the MCP row with these shapes"
    )

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

    async def test_an_mcp_read_in_the_cli_and_an_approved_mcp_write_carry_the_idempotency_key(
        self, run: SessionRun
    ) -> None:
        order = {"order_id": "A-1"}
        run.model.enqueue(
            reply_tools(("m1", MCP_LOOKUP, order), ("m2", MCP_REFUND, order)),
            reply_text("Order A-1 is refunded."),
        )
        client, view = run.client, AnthropicFeatureView(runner_texts=[RESUME_PROMPT])
        session = await client.start_session(MCP_FLOW_TYPE, "Refund order A-1")
        snapshot = await client.wait_for(session, pending_interrupt("m2"))
        assert snapshot.pending_interrupts[0].tool_name == MODEL_NAMES[MCP_REFUND]
        assert run.tool_log.count("refund_order") == 0
        assert await client.resolve_interrupt(session, "m2", approved=True)
        snapshot = await client.wait_for(session, turns_done(1))
        assert snapshot.messages[-1].text == "Order A-1 is refunded."

        assert {MCP_LOOKUP, MCP_REFUND} <= set(view.tool_names(run.requests[0]))
        # The read ran inside the CLI run with the key its tool Step would have had (no Step
        # gives it one); the write ran once in its tool Step with that Step's key.
        (lookup,) = run.tool_log.entries("lookup_order")
        (refund,) = run.tool_log.entries("refund_order")
        assert (lookup["order_id"], lookup["key"]) == ("A-1", f"{session}/turn-1/m1")
        assert (refund["order_id"], refund["key"]) == ("A-1", f"{session}/turn-1/m2")
        assert view.tool_outputs(run.requests[1]) == {
            "m1": "order A-1 is shipped",
            "m2": "order A-1 is refunded",
        }
        assert await step_types(client, session) == [
            "StartAgentSession",
            "RunModel",
            "AwaitToolApproval",
            "ResumeTurn",
            "CallSingleAttemptTool",
            "RunModel",
            "AwaitUserMessage",
        ]
