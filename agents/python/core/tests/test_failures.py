"""Spec matrix 8 and bad input: each gets a clear error or the contract's recorded failure, and
nothing stored is lost. The tests that run tests.apps.basic share one Worker per backend (none
of them kills it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dex_agents import MessageTooLargeError, SessionNotFoundError, texts
from dex_agents.testing import ScriptedReply, reply_text, reply_tools
from dex_agents.testing.shared_worker import SessionRun, SharedWorkerSuite, WorkerApp

from .helpers import events_of, no_failed_workflows, step_types, turns_done


class TestFailures(SharedWorkerSuite):
    app = WorkerApp(worker_target="tests.apps.basic:flows", worker_cwd=Path(__file__).parent.parent)

    async def test_failed_turn_leaves_the_failure_note_and_the_write_is_not_repeated(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(
            reply_tools(("t1", "set_thermostat", {"celsius": 19})),
            ScriptedReply(status=500),
            ScriptedReply(status=500),
            ScriptedReply(status=500),
            reply_text("The thermostat is already at 19."),
        )
        session = await run.client.start_session("Assistant", "Set 19 degrees.")
        snapshot = await run.client.wait_for(session, turns_done(1))
        assert snapshot.state is not None
        assert "HTTP 500" in (snapshot.state.last_turn_error or "")
        assert await run.client.send_user_message(session, "Did it work?")
        snapshot = await run.client.wait_for(session, turns_done(2))

        assert run.tool_log.count("set_thermostat") == 1
        note = (
            "[Dex] The previous turn failed after these tool calls ran:\n"
            '- set_thermostat {"celsius": 19} -> succeeded: thermostat set to 19\n'
            "Do not repeat these tool calls unless the user asks again."
        )
        # The failed turn keeps its transcript (the runner's unfinished messages), then the note.
        assert [(m.role, m.text) for m in snapshot.messages[:4]] == [
            ("user", "Set 19 degrees."),
            ("assistant", None),
            ("tool", None),
            ("user", note),
        ]
        assert snapshot.state is not None and snapshot.state.last_turn_error is None
        seen = [m.get("content") for m in run.requests[-1].body["messages"]]
        assert note in seen
        failed = await events_of(run.client, session, "turn_failed")
        assert len(failed) == 1 and "HTTP 500" in failed[0]["error"]
        history = await run.client.get_step_history(session)
        run_models = [s for s in history if s.step_type == "RunModel"]
        assert [(s.status, s.attempts) for s in run_models] == [
            ("succeeded", 1),
            ("failed", 3),
            ("succeeded", 1),
        ]
        assert "RecordTurnFailure" in [s.step_type for s in history]

    async def test_malformed_tool_arguments_reach_the_model_as_a_failure(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(reply_tools(("r1", "get_weather", "{not json")), reply_text("Sorry."))
        session = await run.client.start_session("Assistant", "Weather?")
        await run.client.wait_for(session, turns_done(1))
        assert run.tool_log.count("get_weather") == 0
        assert run.tool_outputs(1) == {
            "r1": "The tool call failed: arguments must be a JSON object"
        }

    async def test_a_tool_raising_an_unexpected_error_is_retried_then_recorded_failed(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(reply_tools(("b1", "broken_tool", {})), reply_text("The tool is broken."))
        session = await run.client.start_session("Assistant", "Use the broken tool.")
        await run.client.wait_for(session, turns_done(1))
        assert run.tool_log.count("broken_tool") == 3  # the read effect allows three attempts
        assert run.tool_outputs(1) == {"b1": "The tool call failed: the disk is on fire"}
        history = await run.client.get_step_history(session)
        call = next(s for s in history if s.step_type == "CallTool")
        assert (call.status, call.attempts) == ("failed", 3)
        # The failure route's input is the failing Step's; its recovery is kept apart from it.
        route = next(s for s in history if s.step_type == "RecordToolFailure")
        assert route.input == call.input == '"b1"'
        assert route.recovery is not None
        recovery = (
            route.recovery.detail,
            route.recovery.attempt_progress,
            route.recovery.error_type,
        )
        assert recovery == ("the disk is on fire", "NOT_COMPLETED", "RuntimeError")

    async def test_tool_call_ids_that_break_the_rules_fail_the_turn_clearly(
        self, run: SessionRun
    ) -> None:
        """IDs and names from the model that no ID column can hold (on either database) fail the
        turn with a clear error instead of failing the commit; the session goes on."""
        long_id = "x" * 300
        run.model.enqueue(
            reply_tools(("a/b", "get_weather", {"city": "Bern"})),
            reply_tools((long_id, "get_weather", {"city": "Bern"})),
            reply_tools(("a\x00b", "get_weather", {"city": "Bern"})),
            reply_tools(("c1", "get\x00weather", {"city": "Bern"})),
            reply_text("Recovered."),
        )
        expected = [
            "tool call ID 'a/b' must not contain '/'",
            "tool call ID is 300 characters; an ID holds at most 255 characters "
            f"(it begins {long_id[:40]!r})",
            "tool call ID must not contain control characters or unpaired surrogates "
            "(it begins 'a\\x00b')",
            "tool name must not contain control characters or unpaired surrogates "
            "(it begins 'get\\x00weather')",
        ]
        session = await run.client.start_session("Assistant", "Weather in Bern?")
        for turn, problem in enumerate(expected, start=1):
            snapshot = await run.client.wait_for(session, turns_done(turn))
            assert snapshot.state is not None
            assert snapshot.state.last_turn_error == (
                f"the model's tool calls cannot run: {problem}"
            )
            assert await run.client.send_user_message(session, "Try again")
        snapshot = await run.client.wait_for(session, turns_done(len(expected) + 1))
        assert [m.text for m in snapshot.messages][-1] == "Recovered."
        assert no_failed_workflows(run.client.database_url, session)

    async def test_bad_rpc_input_gets_a_clear_error_and_loses_nothing(
        self, run: SessionRun
    ) -> None:
        run.model.enqueue(reply_text("Hi."))
        session = await run.client.start_session("Assistant", "Hello")
        await run.client.wait_for(session, turns_done(1))

        for call in (
            run.client.get_agent_snapshot("no-such-session"),
            run.client.send_user_message("no-such-session", "hi"),
            run.client.resolve_interrupt("no-such-session", "x", approved=True),
            run.client.list_agent_messages("no-such-session"),
            run.client.get_step_history("no-such-session"),
        ):
            with pytest.raises(SessionNotFoundError, match="no agent session 'no-such-session'"):
                await call

        assert await run.client.send_user_message(session, "   ") is False
        with pytest.raises(MessageTooLargeError, match="at most 1,048,576 bytes"):
            await run.client.send_user_message(session, "x" * (texts.MAX_USER_MESSAGE_BYTES + 1))
        assert await run.client.resolve_interrupt(session, "unknown", approved=False) is False
        with pytest.raises(ValueError, match="already exists"):
            await run.client.start_session("Assistant", "again", session_id=session)

        snapshot = await run.client.get_agent_snapshot(session)
        assert snapshot.queued_message_count == 0
        assert [m.text for m in snapshot.messages] == ["Hello", "Hi."]

        run.model.enqueue(reply_text("Still here."))
        assert await run.client.send_user_message(session, "Still there?")
        snapshot = await run.client.wait_for(session, turns_done(2))
        assert snapshot.messages[-1].text == "Still here."
        assert await step_types(run.client, session) == [
            "StartAgentSession",
            "RunModel",
            "AwaitUserMessage",
            "RunModel",
            "AwaitUserMessage",
        ]

    async def test_session_settings_are_copied_at_turn_start(self, run: SessionRun) -> None:
        run.model.enqueue(reply_text("One."))
        session = await run.client.start_session(
            "Assistant", "Hi", session_settings={"model": "small"}
        )
        snapshot = await run.client.wait_for(session, turns_done(1))
        assert snapshot.session_settings == {"model": "small"}
        assert await run.client.update_session_settings(session, {"model": "large"})
        assert await run.client.update_session_settings(session, None) is False
        assert await run.client.update_session_settings(session, {"x": "y" * 20_000}) is False
        snapshot = await run.client.get_agent_snapshot(session)
        assert snapshot.session_settings == {"model": "large"}


async def test_a_runner_returning_an_invalid_outcome_fails_the_turn(make_worker, client):
    with make_worker("tests.apps.broken:flows"):
        session = await client.start_session("Broken", "Hello")
        snapshot = await client.wait_for(session, turns_done(1))
    assert snapshot.state is not None
    assert "must return TurnCompleted, ToolCallsRequested or TurnContinued" in (
        snapshot.state.last_turn_error or ""
    )
    assert [m.text for m in snapshot.messages] == ["Hello"]
    history = await client.get_step_history(session)
    run_model = next(s for s in history if s.step_type == "RunModel")
    assert (run_model.status, run_model.attempts) == ("failed", 1)  # a defect is not retried
