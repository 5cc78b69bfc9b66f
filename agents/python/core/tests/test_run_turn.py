"""run_turn, start_session_and_wait and commit-woken waits, through one real Worker process per
backend that the module's tests share (none of them kills it)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from dex_agents import SyncAgentClient
from dex_agents.testing import ScriptedReply, reply_text, reply_tools
from dex_agents.testing.shared_worker import SessionRun, SharedWorkerSuite, WorkerApp

from .helpers import turns_done


class TestRunTurn(SharedWorkerSuite):
    app = WorkerApp(worker_target="tests.apps.basic:flows", worker_cwd=Path(__file__).parent.parent)

    async def test_run_turn_returns_the_completed_turn(self, run: SessionRun) -> None:
        run.model.enqueue(
            reply_tools(("call_1", "get_weather", {"city": "Paris"})),
            reply_text("It is sunny in Paris."),
        )
        session = await run.client.start_session("Assistant")
        result = await run.client.run_turn(session, "What's the weather in Paris?", timeout=60)

        assert (result.session_id, result.turn_id, result.status) == (
            session,
            "turn-1",
            "completed",
        )
        assert result.text == "It is sunny in Paris."
        assert result.error is None and result.interrupts == []
        assert [(m.role, m.text) for m in result.messages] == [
            ("user", "What's the weather in Paris?"),
            ("assistant", None),
            ("tool", None),
            ("assistant", "It is sunny in Paris."),
        ]
        assert {m.turn_id for m in result.messages} == {"turn-1"}
        assert result.usage.model_calls == 2

    async def test_start_session_and_wait_returns_the_first_turn(self, run: SessionRun) -> None:
        run.model.enqueue(reply_text("Hello!"), reply_text("Again."))
        first = await run.client.start_session_and_wait("Assistant", "Hi", timeout=60)
        second = await run.client.run_turn(first.session_id, "Once more", timeout=60)

        assert (first.turn_id, first.status, first.text) == ("turn-1", "completed", "Hello!")
        assert [m.text for m in first.messages] == ["Hi", "Hello!"]
        assert (second.turn_id, second.status, second.text) == ("turn-2", "completed", "Again.")
        assert [m.text for m in second.messages] == ["Once more", "Again."]

    async def test_run_turn_returns_a_turn_waiting_on_an_approval(self, run: SessionRun) -> None:
        run.model.enqueue(
            reply_tools(("w1", "send_email", {"to": "ana@example.com", "body": "Hi"})),
            reply_text("Email sent."),
        )
        session = await run.client.start_session("Assistant")
        waiting = await run.client.run_turn(session, "Email Ana.", timeout=60)
        assert waiting.status == "waiting_for_interrupts"
        (interrupt,) = waiting.interrupts
        assert (interrupt.interrupt_id, interrupt.kind, interrupt.tool_name) == (
            "w1",
            "tool_approval",
            "send_email",
        )
        assert waiting.text is None
        assert waiting.messages[0].text == "Email Ana."

        assert await run.client.resolve_interrupt(session, "w1", approved=True)
        done = await run.client.wait_for_turn(
            session, waiting.turn_id, after=waiting.event_offset, timeout=60
        )

        assert (done.turn_id, done.status, done.text) == ("turn-1", "completed", "Email sent.")
        assert done.interrupts == []
        assert [m.role for m in done.messages] == ["user", "assistant", "tool", "assistant"]

    async def test_run_turn_returns_a_failed_turn(self, run: SessionRun) -> None:
        run.model.enqueue(
            ScriptedReply(status=500), ScriptedReply(status=500), ScriptedReply(status=500)
        )
        session = await run.client.start_session("Assistant")
        result = await run.client.run_turn(session, "Set 19 degrees.", timeout=60)

        assert (result.turn_id, result.status) == ("turn-1", "failed")
        assert "HTTP 500" in (result.error or "")
        assert result.messages[0].text == "Set 19 degrees."

    async def test_messages_queued_behind_a_running_turn_return_their_own_turns(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(
            ScriptedReply(text="First answer.", hang=True),
            reply_text("Second answer."),
            reply_text("Third answer."),
        )
        session = await run.client.start_session("Assistant", "First question")
        run.model.wait_for_requests(run.first_request + 1)
        second = asyncio.create_task(run.client.run_turn(session, "Second question", timeout=60))
        await run.client.wait_for(session, lambda s: s.queued_message_count == 1, timeout=30)
        third = asyncio.create_task(run.client.run_turn(session, "Third question", timeout=60))
        await run.client.wait_for(session, lambda s: s.queued_message_count == 2, timeout=30)
        run.model.release()
        results = await asyncio.gather(second, third)

        assert [(r.turn_id, r.status, r.text) for r in results] == [
            ("turn-2", "completed", "Second answer."),
            ("turn-3", "completed", "Third answer."),
        ]
        assert [m.text for m in results[0].messages] == ["Second question", "Second answer."]
        assert [m.text for m in results[1].messages] == ["Third question", "Third answer."]

    async def test_wait_for_and_follow_events_see_the_worker_commits(self, run: SessionRun) -> None:
        run.model.enqueue(reply_text("One."), reply_text("Two."))
        session = await run.client.start_session("Assistant", "First")
        snapshot = await run.client.wait_for(session, turns_done(1), timeout=60)
        assert [m.text for m in snapshot.messages] == ["First", "One."]

        seen: list[str] = []

        async def follow() -> None:
            async for event in run.client.follow_events(session):
                seen.append(event.type)
                if event.type == "turn_completed" and event.turn_id == "turn-2":
                    return

        assert await run.client.send_user_message(session, "Second")
        await asyncio.wait_for(follow(), timeout=60)

        assert seen.count("turn_started") == 2
        assert seen.count("turn_completed") == 2
        assert seen[-1] == "turn_completed"

    async def test_sync_client_runs_a_turn(self, run: SessionRun, shared_database: str) -> None:
        run.model.enqueue(reply_text("Hello from sync."), reply_text("Second."))

        def converse() -> tuple[str | None, str | None, str]:
            sync = SyncAgentClient(shared_database)
            try:
                first = sync.start_session_and_wait("Assistant", "Hi", timeout=60)
                second = sync.run_turn(first.session_id, "And?", timeout=60)
                return first.text, second.text, second.status
            finally:
                sync.close()

        outcome = await asyncio.to_thread(converse)

        assert outcome == ("Hello from sync.", "Second.", "completed")
