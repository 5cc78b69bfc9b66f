"""Input rules: every text that enters from outside, or from user code, is either stored and
read back byte-for-byte on SQLite and Postgres, or refused at the RPC before anything
commits, with an `InvalidInputError` that names the argument."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from dex_agents import (
    AgentClient,
    DexAgentsError,
    InvalidInputError,
    MessageTooLargeError,
    SessionExistsError,
    SessionNotFoundError,
    db,
    store,
    texts,
)
from dex_agents.cli import cli
from dex_agents.db import LOSSLESS_MARKER, Database
from dex_agents.testing import ScriptedReply, reply_text, reply_tools
from dex_agents.types import AgentUserMessage

from .helpers import pending_interrupt, tool_messages, turns_done

# Texts neither database stores as they are (NUL, unpaired surrogates), the marker the
# lossless encoding uses, and ordinary text beside them.
ODD_TEXTS = [
    "a\x00b",
    "\x00",
    "lone \ud800 high",
    "lone \udfff low",
    "\udc80\x00\ud83d",
    LOSSLESS_MARKER,
    LOSSLESS_MARKER + '"not json',
    "emoji \U0001f600 and é, \u2028 and \x1b[0m",
    "",
]
ODD_TEXT = "a\x00b \ud800 c"

BAD_IDENTIFIERS: list[tuple[Any, str]] = [
    (b"session-1", "must be a str, not bytes"),
    (42, "must be a str, not int"),
    ("", "must not be blank"),
    ("   ", "must not be blank"),
    ("a\x00b", "control characters"),
    ("a\nb", "control characters"),
    ("a\ud800b", "unpaired surrogates"),
    ("x" * 256, "at most 255 characters"),
]

BAD_SETTINGS: list[tuple[Any, str]] = [
    ({"t": math.nan}, "no NaN or Infinity"),
    ({"t": [1, math.inf]}, "no NaN or Infinity"),
    ({"t": {"u": -math.inf}}, "no NaN or Infinity"),
    ({1: "x"}, "key of type int"),
    ({"t": b"x"}, "holds a bytes"),
    ({"t": {1, 2}}, "holds a set"),
    ({"t": (1, 2)}, "holds a tuple"),
    ({"t": "\ud800"}, "unpaired surrogate"),
    ({"t": 2**64}, "beyond 64 bits"),
    ({"t": [-1e19]}, "beyond 64-bit integers"),
    ({"t": "y" * texts.MAX_SESSION_SETTINGS_BYTES}, "at most 16,384 bytes"),
    (["a"], "must be a JSON object"),
]


# Storage ----------------------------------------------------------------------------------


def test_every_text_column_reads_back_byte_for_byte(database_url):
    database = Database(database_url)
    database.create_schema()
    rows = [
        {
            "session_id": "s",
            "sequence": index,
            "turn_id": "t",
            "role": "tool",
            "text": text,
            "tool_arguments": text,
            "tool_output": text,
            "framework_item": text,
            "created_at": "now",
        }
        for index, text in enumerate(ODD_TEXTS)
    ]
    try:
        database.write_sync(lambda conn: conn.execute(db.messages.insert(), rows))
        query = sa.select(db.messages).order_by(db.messages.c.sequence)
        stored = database.read_sync(lambda conn: conn.execute(query).mappings().all())
    finally:
        database.close()
    for text, row in zip(ODD_TEXTS, stored, strict=True):
        columns = ("text", "tool_arguments", "tool_output", "framework_item")
        assert [row[name] for name in columns] == [text] * 4


def test_wire_json_round_trips_nul_and_unpaired_surrogates():
    message = AgentUserMessage(text=ODD_TEXT)
    assert AgentUserMessage.model_validate_json(message.to_json()) == message


# Refusals before any transaction ----------------------------------------------------------


@pytest.mark.parametrize(("session_id", "problem"), BAD_IDENTIFIERS)
async def test_a_bad_session_id_is_refused_and_nothing_commits(client, session_id, problem):
    await client.start_session("Assistant", "first", session_id="kept")
    with pytest.raises(InvalidInputError, match=re.escape(problem)) as refused_start:
        await client.start_session("Assistant", "hello", session_id=session_id)
    assert refused_start.value.argument == "session_id"
    for call in (
        client.send_user_message(session_id, "hi"),
        client.get_agent_snapshot(session_id),
        client.read_events(session_id),
        client.cancel_turn(session_id),
    ):
        with pytest.raises(InvalidInputError) as refused:
            await call
        assert refused.value.argument == "session_id"
    assert [s.session_id for s in await client.list_sessions()] == ["kept"]


@pytest.mark.parametrize(("settings", "problem"), BAD_SETTINGS)
async def test_settings_that_are_not_strict_json_are_refused_and_nothing_commits(
    client, settings, problem
):
    await client.start_session("Assistant", "first", session_id="kept")
    with pytest.raises(InvalidInputError, match=re.escape(problem)):
        await client.start_session("Assistant", "hi", session_id="s", session_settings=settings)
    assert [s.session_id for s in await client.list_sessions()] == ["kept"]


async def test_wrong_argument_types_raise_invalid_input_naming_the_argument(client):
    await client.start_session("Assistant", "hi", session_id="s")
    refused: list[tuple[Any, str]] = [
        (client.start_session(42), "flow_type"),
        (client.start_session("Assistant", b"hi"), "initial_message"),
        (client.send_user_message("s", b"hi"), "message"),
        (client.send_user_message("s", {"text": "hi"}), "message"),
        (client.resolve_interrupt("s", "i", "yes"), "approved"),
        (client.resolve_interrupt("s", 7, True), "interrupt_id"),
        (client.resolve_interrupt("s", "i", False, 3), "rejection_message"),
        (client.answer_question("s", "i", None), "answer"),
        (client.execute_plan("s", "1"), "revision"),
        (client.execute_plan("s", True), "revision"),
        (client.execute_plan("s", 2**40), "revision"),
        (client.steer_user_message("s", text=b"x"), "text"),
        (client.steer_user_message("s", message_id=1), "message_id"),
        (client.delete_queued_message("s", None), "message_id"),
        (client.cancel_turn("s", 5), "turn_id"),
        (client.list_agent_messages("s", before_sequence="3"), "before_sequence"),
        (client.list_agent_messages("s", limit=1.5), "limit"),
        (client.read_events("s", after=None), "after"),
        (client.list_sessions("10"), "limit"),
        (client.list_sessions(0), "limit"),
        (client.read_events("s", limit=-1), "limit"),
        (client.read_events("s", after=-5), "after"),
    ]
    for call, argument in refused:
        with pytest.raises(InvalidInputError, match=argument) as error:
            await call
        assert error.value.argument == argument
    snapshot = await client.get_agent_snapshot("s")
    assert snapshot.queued_message_count == 0


async def test_every_free_text_has_the_user_message_limit(client):
    await client.start_session("Assistant", "hi", session_id="s")
    limit = texts.MAX_USER_MESSAGE_BYTES
    too_long = "x" * (limit + 1)
    # An unpaired surrogate counts the three bytes it takes in UTF-8, as a BMP character.
    surrogates = "\ud800" * (limit // 3 + 1)
    for call in (
        client.start_session("Assistant", too_long),
        client.send_user_message("s", too_long),
        client.send_user_message("s", AgentUserMessage(text=surrogates)),
        client.steer_user_message("s", text=too_long),
        client.resolve_interrupt("s", "i", False, "r" * 10_000_000),
        client.answer_question("s", "i", too_long),
    ):
        with pytest.raises(MessageTooLargeError, match=f"at most {limit:,} bytes"):
            await call
    assert await client.send_user_message("s", "x" * limit)
    snapshot = await client.get_agent_snapshot("s")
    assert [len(m.message.text) for m in snapshot.queued_messages] == [limit]


async def test_client_errors_share_one_hierarchy(client):
    await client.start_session("Assistant", "hi", session_id="s")
    with pytest.raises(SessionExistsError) as exists:
        await client.start_session("Assistant", "again", session_id="s")
    with pytest.raises(SessionNotFoundError) as missing:
        await client.get_agent_snapshot("nope")
    assert isinstance(exists.value, InvalidInputError) and isinstance(exists.value, ValueError)
    assert exists.value.argument == "session_id"
    assert isinstance(missing.value, DexAgentsError) and isinstance(missing.value, LookupError)


# Lossless round trips through the RPCs ------------------------------------------------------


SETTINGS = {"nul\x00key": "a\x00b", "n": [1, 2.5, None, True], "é": "\U0001f600"}


async def test_texts_sent_through_the_rpcs_read_back_byte_for_byte(client):
    session_ids = [f"s{index}-é\U0001f600" for index in range(len(ODD_TEXTS))]
    for session_id, text in zip(session_ids, ODD_TEXTS, strict=True):
        await client.start_session(
            "Assistant", text, session_id=session_id, session_settings=SETTINGS
        )
        session = await _session(client, session_id)
        assert session.start_input.initial_message == text
        assert session.start_input.session_settings == SETTINGS
    session_id = session_ids[0]
    sent = [text for text in ODD_TEXTS if text.strip()]
    for text in sent:
        assert await client.send_user_message(session_id, text)
    # With no active turn, steered text is queued as send_user_message queues it.
    assert await client.steer_user_message(session_id, text=ODD_TEXT)

    snapshot = await client.get_agent_snapshot(session_id)
    assert [m.message.text for m in snapshot.queued_messages] == [*sent, ODD_TEXT]
    listed = {summary.session_id for summary in await client.list_sessions()}
    assert listed == set(session_ids)


# Through a real Worker: model output, tool output, approvals and answers ----------------------


async def test_nul_and_surrogates_in_every_text_of_a_turn_finish_it_intact(
    make_worker, model, client, tool_log
):
    """Model output, tool arguments and output, an approval's rejection message, user and
    steered messages, settings, and a session ID at its limit."""
    recipient = "to\x00me \ud800"
    steered = "steer \x00 \udc00 here"
    model.enqueue(
        reply_tools(("e1", "send_email", {"to": recipient, "body": ODD_TEXT}), text=ODD_TEXT),
        reply_tools(("e2", "send_email", {"to": "x", "body": "y"})),
        reply_text("done \x00 \udfff"),
        ScriptedReply(text="about to be steered", hang=True),
        reply_text("steered \x00"),
    )
    # The longest session ID allowed, outside ASCII, reaches DBOS and every table intact.
    session = "é\U0001f600" + "x" * 253
    with make_worker():
        assert await client.start_session("Assistant", ODD_TEXT, session_id=session) == session
        await client.wait_for(session, pending_interrupt("e1"))
        with pytest.raises(MessageTooLargeError, match="rejection_message"):
            await client.resolve_interrupt(session, "e1", False, "r" * 10_000_000)
        with pytest.raises(InvalidInputError, match="approved must be a bool"):
            await client.resolve_interrupt(session, "e1", 1)
        assert await client.resolve_interrupt(session, "e1", approved=True)
        await client.wait_for(session, pending_interrupt("e2"))
        rejection = "not now \x00 \ud800"
        assert await client.resolve_interrupt(session, "e2", False, rejection)
        await client.wait_for(session, turns_done(1))
        # update_session_settings answers false (the contract's answer) for what start_session
        # refuses, and keeps the stored settings.
        assert await client.update_session_settings(session, SETTINGS)
        for settings, _ in BAD_SETTINGS:
            assert await client.update_session_settings(session, settings) is False
        first_turn = await client.get_agent_snapshot(session)

        assert await client.send_user_message(session, LOSSLESS_MARKER + ODD_TEXT)
        model.wait_for_requests(4)
        await client.wait_for(session, lambda s: bool(s.state and s.state.accepts_turn_control))
        assert await client.steer_user_message(session, text=steered)
        model.release()
        snapshot = await client.wait_for(session, turns_done(3))

    assert snapshot.session_settings == SETTINGS
    assert [s.session_id for s in await client.list_sessions()] == [session]

    assert snapshot.state is not None and snapshot.state.last_turn_error is None
    assert [(m.role, m.text) for m in first_turn.messages if m.role != "tool"] == [
        ("user", ODD_TEXT),
        ("assistant", ODD_TEXT),
        ("assistant", None),
        ("assistant", "done \x00 \udfff"),
    ]
    later = snapshot.messages[len(first_turn.messages) :]
    assert [(m.role, m.text) for m in later] == [
        ("user", LOSSLESS_MARKER + ODD_TEXT),
        ("assistant", "about to be steered"),  # a steer during a final answer waits for it
        ("user", steered),
        ("assistant", "steered \x00"),
    ]
    outputs = {m.tool_call_id: m.tool_output for m in snapshot.messages if m.role == "tool"}
    assert outputs["e1"] == f"sent to {recipient}"
    assert rejection in (outputs["e2"] or "")
    # The model is sent each unpaired surrogate as U+FFFD; the session keeps the texts.
    assert tool_messages(model, 2) == {
        "e1": "sent to to\x00me \ufffd",
        "e2": (outputs["e2"] or "").replace("\ud800", "\ufffd"),
    }
    assert [entry["to"] for entry in tool_log.entries("send_email")] == [recipient]


async def test_answers_reach_the_model_and_are_kept_byte_for_byte(make_worker, model, client):
    model.enqueue(reply_tools(("q1", "ask_user", {"question": "Name?\x00"})), reply_text("Thanks."))
    with make_worker("tests.apps.planning:flows"):
        session = await client.start_session("Planner", "Ask me")
        snapshot = await client.wait_for(session, pending_interrupt("q1"))
        assert snapshot.pending_interrupts[0].question == "Name?\x00"
        with pytest.raises(InvalidInputError, match="interrupt_id must not contain control"):
            await client.answer_question(session, "q1\x00", "x")
        assert await client.answer_question(session, "q1", ODD_TEXT)
        snapshot = await client.wait_for(session, turns_done(1))
    assert snapshot.state is not None and snapshot.state.last_turn_error is None
    sent = json.loads(tool_messages(model, 1)["q1"])["answer"]
    assert sent == ODD_TEXT.replace("\ud800", "\ufffd")  # NUL as it is; U+FFFD for the surrogate
    (answer,) = [m.tool_output for m in snapshot.messages if m.role == "tool"]
    assert json.loads(answer or "")["answer"] == ODD_TEXT


async def _session(client: AgentClient, session_id: str) -> store.Session:
    """The stored session row, parsed (the start input is not in the snapshot)."""
    return await client._read(lambda conn: store.read_session(conn, session_id))


def test_the_cli_prints_a_refused_argument_as_one_line(database_url):
    env = {"DEX_AGENTS_DATABASE_URL": database_url}
    runner = CliRunner()
    started = runner.invoke(cli, ["start", "Assistant", "hi", "--session-id", "kept"], env=env)
    assert started.exit_code == 0, started.output
    for args, message in [
        (["start", "Assistant", "hi", "--settings", '{"t": NaN}'], "no NaN or Infinity"),
        (["start", "Assistant", "hi", "--session-id", "x" * 256], "at most 255 characters"),
        (["send", "bad\x1bid", "hi"], "session_id must not contain control characters"),
    ]:
        result = runner.invoke(cli, args, env=env)
        assert result.exit_code == 1
        assert result.stderr.startswith("error: ") and message in result.stderr
        assert result.stderr.count("\n") == 1
    listed = runner.invoke(cli, ["sessions", "--json"], env=env)
    assert [s["session_id"] for s in json.loads(listed.stdout)] == ["kept"]
