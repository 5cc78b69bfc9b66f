"""The shared session-features suite (`dex_agents.testing.features`) on TypeScript Stepwise,
through a real Python Worker calling it in a real Node process (features_flows.py): the
built-ins, plan mode, session settings and compaction, the rows Python's Stepwise passes.

With them, on the same Worker, the README's Stepwise example as it is written
(readme-example.ts): a read runs in its tool Step, and the write waits for approval, then runs
once with its idempotency key. And turn continuations through the Worker: a continued turn is
one turn of several RunModel Steps, and the ninth continuation in a row ends it with the
contract's turn error.

The MCP row runs the `/mcp` subpath's McpToolSource in the Node runner: the runner starts the
Python core's stdio MCP server for each request, and the server records the idempotency key
it finds in `_meta`."""

from __future__ import annotations

import json
from pathlib import Path

from dex_agents.stepwise import CONTINUATION_LIMIT_ERROR
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

    async def test_a_continued_turn_is_one_turn_of_several_model_steps(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(reply_text("Again: a draft."), reply_text("Final."))
        client = run.client
        done = await client.start_session_and_wait("Continuing", "Write a line.", timeout=60)
        assert (done.status, done.text) == ("completed", "Final.")
        snapshot = await client.get_agent_snapshot(done.session_id)
        assert [(m.role, m.text) for m in snapshot.messages] == [
            ("user", "Write a line."),
            ("assistant", "Again: a draft."),
            ("user", "Check it again."),
            ("assistant", "Final."),
        ]
        assert run.user_texts(1) == ["Write a line.", "Check it again."]
        assert await step_types(client, done.session_id) == [
            "StartAgentSession",
            "RunModel",
            "RunModel",
            "AwaitUserMessage",
        ]

    async def test_the_ninth_continuation_in_a_row_ends_the_turn_with_its_error(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(*[reply_text(f"Again {i}.") for i in range(9)])
        client = run.client
        failed = await client.start_session_and_wait("Continuing", "Loop.", timeout=60)
        assert failed.error == CONTINUATION_LIMIT_ERROR
        assert len(run.requests) == 9
        snapshot = await client.get_agent_snapshot(failed.session_id)
        assert snapshot.state is not None
        assert snapshot.state.last_turn_error == CONTINUATION_LIMIT_ERROR
        assert snapshot.messages[-1].text == "Again 8."
        assert (await step_types(client, failed.session_id)).count("RunModel") == 9
