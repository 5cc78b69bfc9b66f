"""The shared session-features suite (`dex_agents.testing.features`) on TypeScript Stepwise,
through a real Python Worker calling it in a real Node process (features_flows.py): the
built-ins, plan mode, session settings and compaction, the rows Python's Stepwise passes.

With them, on the same Worker, the README's Stepwise example as it is written
(readme-example.ts): a read runs in its tool Step, and the write waits for approval, then runs
once with its idempotency key.

The MCP row is skipped: the TypeScript core has no MCP tool source (`McpToolSource` is the
Python core's), so a TypeScript Stepwise agent has no MCP tools to offer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

from dex_agents.testing.features import FeatureApp, FeatureSuite
from dex_agents.testing.model_server import reply_text, reply_tools
from dex_agents.testing.sessions import pending_interrupt, step_types, turns_done
from dex_agents.testing.shared_worker import SessionRun, chat_completions


class TestFeatures(FeatureSuite):
    app = FeatureApp(
        worker_target="features_flows:flows",
        worker_cwd=Path(__file__).resolve().parent,
        model_view=chat_completions,
    )
    supports_mcp: ClassVar[bool] = False
    unsupported_reason: ClassVar[str] = "the TypeScript core has no MCP tool source"

    async def test_the_readme_example_reads_then_writes_once_approved(
        self, run: SessionRun
    ) -> None:
        message = {"to": "ana", "text": "Sunny in Lisbon."}
        run.model.enqueue(
            reply_tools(("c1", "get_weather", {"city": "Lisbon"})),
            reply_tools(("c2", "send_message", message)),
            reply_text("Sent."),
        )
        client = run.client
        session = await client.start_session("Assistant", "Tell Ana the weather in Lisbon.")
        await client.wait_for(session, pending_interrupt("c2"))
        assert await client.resolve_interrupt(session, "c2", approved=True)
        snapshot = await client.wait_for(session, turns_done(1))

        assert json.loads(run.tool_outputs(1)["c1"]) == {"city": "Lisbon", "sky": "sunny"}
        assert run.tool_outputs(2)["c2"] == f"sent to ana (key {session}/turn-1/c2)"
        assert snapshot.messages[-1].text == "Sent."
        assert chat_completions.instructions(run.requests[0]) == "Be concise."
        assert chat_completions.tool_names(run.requests[0]) == [
            "get_weather",
            "send_message",
            "ask_user",
            "durable_wait",
            "write_todos",
        ]
        assert await step_types(client, session) == [
            "StartAgentSession",
            "RunModel",
            "CallTool",
            "ResumeTurn",
            "RunModel",
            "AwaitToolApproval",
            "ResumeTurn",
            "CallSingleAttemptTool",
            "RunModel",
            "AwaitUserMessage",
        ]
