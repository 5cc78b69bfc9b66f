"""The shared session-features suite (`dex_agents.testing.features`) on pi-ai models and Pi
tools, through a real Python Worker calling TypeScript Stepwise in a real Node process
(features_flows.py): the built-ins, plan mode, session settings, compaction and MCP tools.

With them, on the same Worker, the README's example as it is written (readme-example.ts):
Pi's own read tool runs in its tool Step, and Pi's write tool waits for approval, then runs
once and writes the file.

The MCP row runs the core's McpToolSource (`@superdurable/dex-agents/mcp`) among a Pi agent's
tools on Stepwise: the Node runner starts the Python core's stdio MCP server for each request,
and the server records the idempotency key it finds in `_meta`."""

from __future__ import annotations

import tempfile
from pathlib import Path

from dex_agents.testing.features import FeatureApp, FeatureSuite
from dex_agents.testing.model_server import reply_text, reply_tools
from dex_agents.testing.sessions import pending_interrupt, step_types, turns_done
from dex_agents.testing.shared_worker import SessionRun, chat_completions

WORKSPACE = Path(tempfile.mkdtemp(prefix="dex-pi-workspace-"))


class TestFeatures(FeatureSuite):
    app = FeatureApp(
        worker_target="features_flows:flows",
        worker_cwd=Path(__file__).resolve().parent,
        model_view=chat_completions,
        worker_env={"WORKSPACE": str(WORKSPACE)},
    )

    async def test_the_readme_example_reads_then_writes_once_approved(
        self, run: SessionRun
    ) -> None:
        (WORKSPACE / "notes.txt").write_text("Lisbon: sunny\n")
        (WORKSPACE / "reply.txt").unlink(missing_ok=True)  # the other backend's run wrote it
        run.model.enqueue(
            reply_tools(("c1", "read", {"path": "notes.txt"})),
            reply_tools(("c2", "write", {"path": "reply.txt", "content": "Sunny in Lisbon."})),
            reply_text("Written."),
        )
        client = run.client
        session = await client.start_session("Assistant", "Answer the note in reply.txt.")
        await client.wait_for(session, pending_interrupt("c2"))
        assert not (WORKSPACE / "reply.txt").exists()
        assert await client.resolve_interrupt(session, "c2", approved=True)
        snapshot = await client.wait_for(session, turns_done(1))

        assert "Lisbon: sunny" in run.tool_outputs(1)["c1"]
        assert "reply.txt" in run.tool_outputs(2)["c2"]
        assert (WORKSPACE / "reply.txt").read_text() == "Sunny in Lisbon."
        assert snapshot.messages[-1].text == "Written."
        assert chat_completions.instructions(run.requests[0]) == "Be concise."
        assert chat_completions.tool_names(run.requests[0]) == [
            "read",
            "write",
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
