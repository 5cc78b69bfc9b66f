"""LangGraph specifics through one shared real Worker (the spec matrix is test_matrix.py): a
tool that reads the graph's state, structured output, and middleware hooks with their own
state key; the Step shape of each turn comes from the Step history."""

from __future__ import annotations

from pathlib import Path

from dex_agents.testing import reply_text, reply_tools, step_types, turns_done
from dex_agents.testing.shared_worker import SessionRun, SharedWorkerSuite, WorkerApp

ROOT = Path(__file__).parent.parent


class TestLangGraphWorker(SharedWorkerSuite):
    app = WorkerApp(worker_target="tests.apps.features:flows", worker_cwd=ROOT)

    async def test_a_tool_reads_the_state_of_the_turns_checkpoint(self, run: SessionRun) -> None:
        run.model.enqueue(reply_text("Hello."))
        session = await run.client.start_session("InjectedAgent", "Hi?")
        await run.client.wait_for(session, turns_done(1))
        run.model.enqueue(
            reply_tools(("c1", "count_messages", {"topic": "a"})), reply_text("Four.")
        )
        await run.client.send_user_message(session, "How many messages?")
        await run.client.wait_for(session, turns_done(2))

        # The stored turn (2), the new question and the model's call, in the CallTool Step.
        assert run.tool_outputs(2) == {"c1": "4 messages, call c1"}
        assert [(e["messages"], e["key"]) for e in run.tool_log.entries("count_messages")] == [
            (4, f"{session}/turn-2/c1")
        ]
        assert (await step_types(run.client, session))[-5:] == [
            "RunModel",
            "CallTool",
            "ResumeTurn",
            "RunModel",
            "AwaitUserMessage",
        ]
