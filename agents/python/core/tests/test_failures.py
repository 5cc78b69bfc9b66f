"""Spec matrix 8 and bad input: each gets a clear error or the contract's recorded failure, and
nothing stored is lost."""

from __future__ import annotations

import pytest

from dex_agents import MessageTooLargeError, SessionNotFoundError, texts
from dex_agents.testing import ScriptedReply, reply_text, reply_tools

from .helpers import events_of, no_failed_workflows, step_types, tool_messages, turns_done


async def test_failed_turn_leaves_the_failure_note_and_the_write_is_not_repeated(
    make_worker, model, client, tool_log
):
    model.enqueue(
        reply_tools(("t1", "set_thermostat", {"celsius": 19})),
        ScriptedReply(status=500),
        ScriptedReply(status=500),
        ScriptedReply(status=500),
        reply_text("The thermostat is already at 19."),
    )
    with make_worker():
        session = await client.start_session("Assistant", "Set 19 degrees.")
        snapshot = await client.wait_for(session, turns_done(1))
        assert snapshot.state is not None
        assert "HTTP 500" in (snapshot.state.last_turn_error or "")
        assert await client.send_user_message(session, "Did it work?")
        snapshot = await client.wait_for(session, turns_done(2))

    assert tool_log.count("set_thermostat") == 1
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
    seen = [m.get("content") for m in model.requests[-1].body["messages"]]
    assert note in seen
    failed = await events_of(client, session, "turn_failed")
    assert len(failed) == 1 and "HTTP 500" in failed[0]["error"]
    history = await client.get_step_history(session)
    run_models = [s for s in history if s.step_type == "RunModel"]
    assert [(s.status, s.attempts) for s in run_models] == [
        ("succeeded", 1),
        ("failed", 3),
        ("succeeded", 1),
    ]
    assert "RecordTurnFailure" in [s.step_type for s in history]


async def test_malformed_tool_arguments_reach_the_model_as_a_failure(
    make_worker, model, client, tool_log
):
    model.enqueue(reply_tools(("r1", "get_weather", "{not json")), reply_text("Sorry."))
    with make_worker():
        session = await client.start_session("Assistant", "Weather?")
        await client.wait_for(session, turns_done(1))
    assert tool_log.count("get_weather") == 0
    assert tool_messages(model, 1) == {
        "r1": "The tool call failed: arguments must be a JSON object"
    }


async def test_a_tool_raising_an_unexpected_error_is_retried_then_recorded_failed(
    make_worker, model, client, tool_log
):
    model.enqueue(reply_tools(("b1", "broken_tool", {})), reply_text("The tool is broken."))
    with make_worker():
        session = await client.start_session("Assistant", "Use the broken tool.")
        await client.wait_for(session, turns_done(1))
    assert tool_log.count("broken_tool") == 3  # the read effect allows three attempts
    assert tool_messages(model, 1) == {"b1": "The tool call failed: the disk is on fire"}
    history = await client.get_step_history(session)
    call = next(s for s in history if s.step_type == "CallTool")
    assert (call.status, call.attempts) == ("failed", 3)
    # The failure route's input is the failing Step's; its recovery is kept apart from it.
    route = next(s for s in history if s.step_type == "RecordToolFailure")
    assert route.input == call.input == '"b1"'
    assert route.recovery is not None
    recovery = (route.recovery.detail, route.recovery.attempt_progress, route.recovery.error_type)
    assert recovery == ("the disk is on fire", "NOT_COMPLETED", "RuntimeError")


async def test_tool_call_ids_that_break_the_rules_fail_the_turn_clearly(make_worker, model, client):
    """IDs and names from the model that no ID column can hold (on either database) fail the
    turn with a clear error instead of failing the commit; the session goes on."""
    long_id = "x" * 300
    model.enqueue(
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
    with make_worker():
        session = await client.start_session("Assistant", "Weather in Bern?")
        for turn, problem in enumerate(expected, start=1):
            snapshot = await client.wait_for(session, turns_done(turn))
            assert snapshot.state is not None
            assert snapshot.state.last_turn_error == (
                f"the model's tool calls cannot run: {problem}"
            )
            assert await client.send_user_message(session, "Try again")
        snapshot = await client.wait_for(session, turns_done(len(expected) + 1))
    assert [m.text for m in snapshot.messages][-1] == "Recovered."
    assert no_failed_workflows(client.database_url, session)


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


async def test_bad_rpc_input_gets_a_clear_error_and_loses_nothing(make_worker, model, client):
    model.enqueue(reply_text("Hi."))
    with make_worker():
        session = await client.start_session("Assistant", "Hello")
        await client.wait_for(session, turns_done(1))

        for call in (
            client.get_agent_snapshot("no-such-session"),
            client.send_user_message("no-such-session", "hi"),
            client.resolve_interrupt("no-such-session", "x", approved=True),
            client.list_agent_messages("no-such-session"),
            client.get_step_history("no-such-session"),
        ):
            with pytest.raises(SessionNotFoundError, match="no agent session 'no-such-session'"):
                await call

        assert await client.send_user_message(session, "   ") is False
        with pytest.raises(MessageTooLargeError, match="at most 1,048,576 bytes"):
            await client.send_user_message(session, "x" * (texts.MAX_USER_MESSAGE_BYTES + 1))
        assert await client.resolve_interrupt(session, "unknown", approved=False) is False
        with pytest.raises(ValueError, match="already exists"):
            await client.start_session("Assistant", "again", session_id=session)

        snapshot = await client.get_agent_snapshot(session)
        assert snapshot.queued_message_count == 0
        assert [m.text for m in snapshot.messages] == ["Hello", "Hi."]

        model.enqueue(reply_text("Still here."))
        assert await client.send_user_message(session, "Still there?")
        snapshot = await client.wait_for(session, turns_done(2))
    assert snapshot.messages[-1].text == "Still here."
    assert await step_types(client, session) == [
        "StartAgentSession",
        "RunModel",
        "AwaitUserMessage",
        "RunModel",
        "AwaitUserMessage",
    ]


async def test_session_settings_are_copied_at_turn_start(make_worker, model, client):
    model.enqueue(reply_text("One."))
    with make_worker():
        session = await client.start_session("Assistant", "Hi", session_settings={"model": "small"})
        snapshot = await client.wait_for(session, turns_done(1))
        assert snapshot.session_settings == {"model": "small"}
        assert await client.update_session_settings(session, {"model": "large"})
        assert await client.update_session_settings(session, None) is False
        assert await client.update_session_settings(session, {"x": "y" * 20_000}) is False
        snapshot = await client.get_agent_snapshot(session)
    assert snapshot.session_settings == {"model": "large"}
