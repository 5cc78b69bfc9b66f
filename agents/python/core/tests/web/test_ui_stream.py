"""The AI SDK UI message stream through a real `dex-agents serve` process and a real Worker, on
SQLite and Postgres; each stream is parsed and assembled by the real `ai` npm package
(tests/web/node/check_stream.mjs) and compared with the snapshot's UI messages.

What the comparison leaves out, as docs/ui-stream.md says: tool parts' `approval` (the stored
messages do not record which calls went through an approval).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from dex_agents import db
from dex_agents.db import normalize_url
from dex_agents.testing import (
    ScriptedModelServer,
    ScriptedReply,
    ToolRunLog,
    reply_text,
    reply_tools,
)
from dex_agents.types import AgentEvent
from dex_agents.web.ui_stream import TurnTranslator
from dex_agents.web.ui_token import UIStreamToken

NODE_DIR = Path(__file__).parent / "node"
Chunk = dict[str, Any]


# One database, model, Worker and server per module and backend ------------------------------


@pytest.fixture(scope="session")
def assemble(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., dict[str, Any]]:
    """Runs check_stream.mjs (the real `ai` package) on response bodies."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the stream is checked with the `ai` npm package")
    if not (NODE_DIR / "node_modules" / "ai").is_dir():
        subprocess.run(["npm", "ci", "--prefix", str(NODE_DIR)], check=True, timeout=300)
    folder = tmp_path_factory.mktemp("streams")

    def run(*bodies: str, continues: bool = False) -> dict[str, Any]:
        files = []
        for body in bodies:
            path = folder / f"stream-{len(list(folder.iterdir()))}.txt"
            path.write_text(body)
            files.append(str(path))
        args = ["node", str(NODE_DIR / "check_stream.mjs")]
        args += ["--continue", *files] if continues else files
        done = subprocess.run(args, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        result: dict[str, Any] = json.loads(done.stdout)
        return result

    return run


# Helpers ------------------------------------------------------------------------------------


async def new_session(http: httpx.AsyncClient) -> str:
    response = await http.post("/api/sessions", json={"flow_type": "Assistant"})
    assert response.status_code == 201, response.text
    session_id: str = response.json()["session_id"]
    return session_id


def user(text: str, message_id: str = "u1") -> dict[str, Any]:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


async def post_chat(
    http: httpx.AsyncClient, session_id: str, messages: list[dict[str, Any]]
) -> str:
    """The whole response body of POST chat (the stream ends with the turn)."""
    body = {"id": session_id, "messages": messages, "trigger": "submit-message"}
    async with http.stream("POST", f"/api/sessions/{session_id}/chat", json=body) as response:
        text = (await response.aread()).decode()
        assert response.status_code == 200, text
        assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
        assert response.headers["content-type"].startswith("text/event-stream")
    return text


async def get_stream(http: httpx.AsyncClient, session_id: str, **params: Any) -> httpx.Response:
    response = await http.get(f"/api/sessions/{session_id}/chat/stream", params=params)
    return response


def events(body: str) -> list[tuple[str | None, str]]:
    """(id, data) of each SSE event, comments (heartbeats) left out."""
    parsed = []
    for block in body.replace("\r\n", "\n").split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in block.split("\n") if line and not line.startswith(":")
        )
        if "data" in fields:
            parsed.append((fields.get("id"), fields["data"]))
    return parsed


def chunks(body: str) -> list[Chunk]:
    sent = events(body)
    assert sent[-1] == (None, "[DONE]")
    assert all(token for token, _ in sent[:-1]), "every chunk has a resume token"
    return [json.loads(data) for _, data in sent[:-1]]


def events_body(sent: list[Chunk]) -> str:
    return "".join(f"data: {json.dumps(c)}\n\n" for c in sent) + "data: [DONE]\n\n"


def shape(sent: list[Chunk]) -> list[str]:
    """Chunk types, with runs of deltas as one."""
    types: list[str] = []
    for chunk in sent:
        kind = chunk["type"]
        if not (kind.endswith("-delta") and types and types[-1] == kind):
            types.append(kind)
    return types


def text_of(sent: list[Chunk]) -> str:
    return "".join(c["delta"] for c in sent if c["type"] == "text-delta")


async def ui_messages(http: httpx.AsyncClient, session_id: str) -> list[dict[str, Any]]:
    response = await http.get(f"/api/sessions/{session_id}/ui-messages")
    assert response.status_code == 200, response.text
    value: list[dict[str, Any]] = response.json()
    return value


def comparable(message: dict[str, Any]) -> dict[str, Any]:
    parts = [{k: v for k, v in part.items() if k != "approval"} for part in message["parts"]]
    return {**message, "parts": parts}


async def assert_matches_snapshot(
    http: httpx.AsyncClient, session_id: str, assembled: dict[str, Any]
) -> None:
    converted = await ui_messages(http, session_id)
    mine = next(m for m in converted if m["id"] == assembled["id"])
    assert comparable(assembled) == comparable(mine)


# A turn with text and a read tool -------------------------------------------------------------


async def test_a_turn_with_a_read_tool_streams_steps_tool_parts_and_text(
    http: httpx.AsyncClient,
    scripted_model: ScriptedModelServer,
    assemble: Callable[..., dict[str, Any]],
) -> None:
    session_id = await new_session(http)
    scripted_model.enqueue(
        reply_tools(("call-w", "get_weather", {"city": "Paris"})),
        reply_text("It is sunny in Paris today."),
    )
    body = await post_chat(http, session_id, [user("Weather in Paris?")])
    sent = chunks(body)

    assert shape(sent) == [
        "start",
        "start-step",
        "tool-input-available",
        "tool-output-available",
        "finish-step",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
    ]
    assert sent[0] == {"type": "start", "messageId": "assistant-turn-1"}
    tool_input, tool_output = sent[2], sent[3]
    assert tool_input == {
        "type": "tool-input-available",
        "toolCallId": "call-w",
        "toolName": "get_weather",
        "input": {"city": "Paris"},
        "dynamic": True,
    }
    assert tool_output["output"] == {"city": "Paris", "forecast": "sunny"}
    assert text_of(sent) == "It is sunny in Paris today."
    assert sent[-1] == {"type": "finish", "finishReason": "stop"}

    result = assemble(body)
    assert result["errors"] == []
    await assert_matches_snapshot(http, session_id, result["message"])
    converted = await ui_messages(http, session_id)
    assert converted[0] == {
        "id": "user-1",
        "role": "user",
        "parts": [{"type": "text", "text": "Weather in Paris?"}],
    }

    # Resume with a token from the middle of the text: a replay is the same stream again,
    # tokens included; exact continues after the token, re-opening the text part.
    sent_events = events(body)
    middle = next(i for i, (_, d) in enumerate(sent_events) if '"text-delta"' in d)
    token = sent_events[middle][0]
    replay = await get_stream(http, session_id, token=token)
    assert replay.status_code == 200
    assert events(replay.text) == sent_events

    exact = await get_stream(http, session_id, token=token, exact="true")
    continued = chunks(exact.text)
    open_text = next(c["id"] for c in sent if c["type"] == "text-start")
    assert continued[:2] == [
        {"type": "start", "messageId": "assistant-turn-1"},
        {"type": "text-start", "id": open_text},
    ]
    assert continued[2:] == sent[middle + 1 :]
    prefix = "".join(f"id: {i}\ndata: {d}\n\n" for i, d in sent_events[: middle + 1])
    joined = assemble(prefix, exact.text, continues=True)["message"]
    texts = [p["text"] for p in joined["parts"] if p["type"] == "text"]
    assert "".join(texts) == "It is sunny in Paris today."

    # A position this session does not have replays the turn from its start.
    beyond = UIStreamToken.decode(token or "").model_copy(update={"o": 10**6}).encode()
    restarted = await get_stream(http, session_id, token=beyond, exact="true")
    assert events(restarted.text) == sent_events

    # Last-Event-ID resumes the same way; a turn that ended leaves nothing to resume.
    by_header = await http.get(
        f"/api/sessions/{session_id}/chat/stream", headers={"Last-Event-ID": token or ""}
    )
    assert events(by_header.text) == sent_events
    nothing = await get_stream(http, session_id)
    assert nothing.status_code == 204


# An approval round trip -------------------------------------------------------------------------


async def test_an_approval_ends_the_stream_and_the_answer_continues_the_turn_once(
    http: httpx.AsyncClient,
    scripted_model: ScriptedModelServer,
    tools: ToolRunLog,
    assemble: Callable[..., dict[str, Any]],
) -> None:
    session_id = await new_session(http)
    sends_before = tools.count("send_email")
    arguments = {"to": "ann@example.com", "body": "Hello"}
    scripted_model.enqueue(
        reply_tools(("call-mail", "send_email", arguments)), reply_text("Sent it.")
    )
    question = user("Mail Ann")
    first = await post_chat(http, session_id, [question])
    sent = chunks(first)
    assert shape(sent) == [
        "start",
        "start-step",
        "tool-input-available",
        "tool-approval-request",
        "finish-step",
        "finish",
    ]
    assert sent[3] == {
        "type": "tool-approval-request",
        "approvalId": "call-mail",
        "toolCallId": "call-mail",
    }
    assert sent[-1] == {"type": "finish", "finishReason": "tool-calls"}

    # The page reloads while the turn waits: the UI messages show the approval, and a
    # resume without a token replays the active turn up to the same wait.
    reloaded = await ui_messages(http, session_id)
    waiting = reloaded[-1]["parts"][-1]
    assert (waiting["state"], waiting["approval"]) == ("approval-requested", {"id": "call-mail"})
    replay = await get_stream(http, session_id)
    assert [c for _, c in events(replay.text)] == [c for _, c in events(first)]

    assistant = assemble(first)["message"]
    part = assistant["parts"][-1]
    part["state"] = "approval-responded"
    part["approval"] = {"id": "call-mail", "approved": True}
    second = await post_chat(http, session_id, [question, assistant])
    rest = chunks(second)
    assert shape(rest) == [
        "start",
        "tool-output-available",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
    ]
    assert rest[1]["output"] == "sent to ann@example.com"
    assert tools.count("send_email") == sends_before + 1

    joined = assemble(first, second, continues=True)
    await assert_matches_snapshot(http, session_id, joined["message"])

    # The same answer again: no turn waits any more, so 400, and the write ran once.
    again = await http.post(
        f"/api/sessions/{session_id}/chat",
        json={"id": session_id, "messages": [question, assistant], "trigger": "submit-message"},
    )
    assert again.status_code == 400
    assert again.json()["error"]["code"] == "invalid_input"
    await asyncio.sleep(0.5)
    assert tools.count("send_email") == sends_before + 1


# Retries and failures ----------------------------------------------------------------------------


async def test_a_retried_model_call_resets_its_step_to_the_retrys_text(
    http: httpx.AsyncClient,
    scripted_model: ScriptedModelServer,
    assemble: Callable[..., dict[str, Any]],
) -> None:
    session_id = await new_session(http)
    scripted_model.enqueue(
        ScriptedReply(text="Let me th", cut_after_text=True), reply_text("Hello there.")
    )
    body = await post_chat(http, session_id, [user("Hi")])
    sent = chunks(body)
    # The failed attempt's text part is never ended: reset-step takes it back, and the
    # retry's part follows in the same step.
    assert shape(sent) == [
        "start",
        "start-step",
        "text-start",
        "text-delta",
        "reset-step",
        "text-start",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
    ]
    reset = next(i for i, c in enumerate(sent) if c["type"] == "reset-step")
    assert sent[reset] == {"type": "reset-step"}
    assert text_of(sent[:reset]) == "Let me th"
    assert text_of(sent[reset:]) == "Hello there."
    starts = [c["id"] for c in sent if c["type"] == "text-start"]
    assert [c["id"] for c in sent if c["type"] == "text-end"] == starts[1:]

    result = assemble(body)
    assert result["errors"] == []
    message = result["message"]
    assert [p["type"] for p in message["parts"]] == ["step-start", "text"]
    assert message["parts"][1]["text"] == "Hello there."
    await assert_matches_snapshot(http, session_id, message)

    # A replay of the turn rebuilds the same message. An exact resume from the failed
    # attempt's text re-opens its part, which reset-step then takes back; one from the
    # reset-step holds no open part.
    sent_events = events(body)
    replay = await get_stream(http, session_id, token=sent_events[reset][0])
    assert events(replay.text) == sent_events
    assert assemble(replay.text)["message"] == message
    for at, reopened in ((reset - 1, [{"type": "text-start", "id": starts[0]}]), (reset, [])):
        exact = await get_stream(http, session_id, token=sent_events[at][0], exact="true")
        continued = chunks(exact.text)
        assert continued == [sent[0], *reopened, *sent[at + 1 :]]
        prefix = "".join(f"id: {i}\ndata: {d}\n\n" for i, d in sent_events[: at + 1])
        assert assemble(prefix, exact.text, continues=True)["message"] == message


async def test_a_failed_turn_sends_an_error_and_finishes_with_error(
    http: httpx.AsyncClient,
    scripted_model: ScriptedModelServer,
    assemble: Callable[..., dict[str, Any]],
) -> None:
    session_id = await new_session(http)
    overloaded = ScriptedReply(status=500, text="the model is overloaded")
    scripted_model.enqueue(
        reply_tools(("call-w2", "get_weather", {"city": "Oslo"})), *[overloaded] * 3
    )
    body = await post_chat(http, session_id, [user("Weather in Oslo?")])
    sent = chunks(body)
    assert shape(sent) == [
        "start",
        "start-step",
        "tool-input-available",
        "tool-output-available",
        "finish-step",
        "error",
        "finish",
    ]
    snapshot = (await http.get(f"/api/sessions/{session_id}/snapshot")).json()
    error = snapshot["state"]["last_turn_error"]
    assert "the model is overloaded" in error
    assert sent[-2:] == [
        {"type": "error", "errorText": error},
        {"type": "finish", "finishReason": "error"},
    ]
    result = assemble(body)
    assert result["errors"] == [error]
    await assert_matches_snapshot(http, session_id, result["message"])
    # The failure note the session stored for the model is not a user message of the UI.
    converted = await ui_messages(http, session_id)
    assert [m["role"] for m in converted] == ["user", "assistant"]


async def test_a_turn_that_fails_mid_text_takes_the_text_back(
    http: httpx.AsyncClient,
    scripted_model: ScriptedModelServer,
    assemble: Callable[..., dict[str, Any]],
) -> None:
    session_id = await new_session(http)
    cut = ScriptedReply(text="Let me th", cut_after_text=True)
    scripted_model.enqueue(*[cut] * 3)
    body = await post_chat(http, session_id, [user("Hi")])
    sent = chunks(body)
    attempt = ["text-start", "text-delta", "reset-step"]
    assert shape(sent) == [
        "start",
        "start-step",
        *attempt * 3,
        "finish-step",
        "error",
        "finish",
    ]
    assert sent[-1] == {"type": "finish", "finishReason": "error"}
    result = assemble(body)
    assert len(result["errors"]) == 1
    # Only the step's start is left; a failed model call stores nothing.
    assert result["message"]["parts"] == [{"type": "step-start"}]
    converted = await ui_messages(http, session_id)
    assert all(m["id"] != result["message"]["id"] for m in converted)


# A question -------------------------------------------------------------------------------------


async def test_a_question_keeps_the_stream_open_until_it_is_answered(
    http: httpx.AsyncClient,
    scripted_model: ScriptedModelServer,
    assemble: Callable[..., dict[str, Any]],
) -> None:
    response = await http.post("/api/sessions", json={"flow_type": "Planner"})
    session_id = response.json()["session_id"]
    ask = {"question": "Which city?", "choices": ["Paris", "Oslo"]}
    scripted_model.enqueue(reply_tools(("call-ask", "ask_user", ask)), reply_text("Paris it is."))
    streaming = asyncio.create_task(post_chat(http, session_id, [user("Plan a trip")]))

    deadline = asyncio.get_running_loop().time() + 30
    while not (await http.get(f"/api/sessions/{session_id}/snapshot")).json()["pending_interrupts"]:
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.05)
    pending = (await ui_messages(http, session_id))[-1]["parts"][-1]
    assert pending["type"] == "data-dex-question"
    assert (pending["data"]["question"], pending["data"]["status"]) == ("Which city?", "pending")
    assert not streaming.done()
    answer = await http.post(
        f"/api/sessions/{session_id}/interrupts/call-ask/answer", json={"answer": "Paris"}
    )
    assert answer.json() == {"result": True}

    sent = chunks(await asyncio.wait_for(streaming, 30))
    questions = [c for c in sent if c["type"] == "data-dex-question"]
    assert [(q["id"], q["data"]["status"]) for q in questions] == [
        ("call-ask", "pending"),
        ("call-ask", "answered"),
    ]
    assert questions[0]["data"]["choices"] == ["Paris", "Oslo"]
    output = next(c for c in sent if c["type"] == "tool-output-available")
    assert output["output"] == {"status": "answered", "answer": "Paris"}
    assert sent[-1] == {"type": "finish", "finishReason": "stop"}
    assembled = assemble(events_body(sent))["message"]
    assembled["parts"] = [p for p in assembled["parts"] if p["type"] != "data-dex-question"]
    await assert_matches_snapshot(http, session_id, assembled)


# Bad input ---------------------------------------------------------------------------------------


async def test_bad_requests_get_clear_errors_before_any_stream(http: httpx.AsyncClient) -> None:
    session_id = await new_session(http)
    chat = f"/api/sessions/{session_id}/chat"

    async def error(response: httpx.Response) -> tuple[int, str, str | None]:
        detail = response.json()["error"]
        return response.status_code, detail["code"], detail["field"]

    wrong_id = await http.post(chat, json={"id": "other", "messages": [user("Hi")]})
    assert await error(wrong_id) == (400, "invalid_input", "id")
    blank = await http.post(chat, json={"id": session_id, "messages": [user("  ")]})
    assert await error(blank) == (400, "invalid_input", "messages")
    no_messages = await http.post(chat, json={"id": session_id, "messages": []})
    assert (await error(no_messages))[:2] == (422, "invalid_request")
    regenerate = await http.post(
        chat,
        json={"id": session_id, "messages": [user("Hi")], "trigger": "regenerate-message"},
    )
    assert await error(regenerate) == (400, "invalid_input", "trigger")
    no_answers = await http.post(
        chat,
        json={"id": session_id, "messages": [{"id": "a", "role": "assistant", "parts": []}]},
    )
    assert await error(no_answers) == (400, "invalid_input", "messages")
    unknown = await http.post(
        "/api/sessions/nope/chat", json={"id": "nope", "messages": [user("Hi")]}
    )
    assert await error(unknown) == (404, "session_not_found", "session_id")

    for token in ("not-a-token", "eyJ2IjoxfQ", "x" * 9000):
        bad = await get_stream(http, session_id, token=token)
        assert await error(bad) == (400, "invalid_resume_token", "token")
    bad_header = await http.get(
        f"/api/sessions/{session_id}/chat/stream", headers={"Last-Event-ID": "%%%"}
    )
    assert await error(bad_header) == (400, "invalid_resume_token", "Last-Event-ID")
    snapshot = (await http.get(f"/api/sessions/{session_id}/snapshot")).json()
    assert snapshot["queued_message_count"] == 0


# Steered, cancelled, and a turn whose end event is gone ---------------------------------------


async def stream_while(
    http: httpx.AsyncClient, session_id: str, text: str, act: Callable[[], Any]
) -> list[Chunk]:
    """POSTs a message and, once its turn asked for the slow read, calls `act`; the stream's
    chunks."""
    streaming = asyncio.create_task(post_chat(http, session_id, [user(text)]))
    deadline = asyncio.get_running_loop().time() + 30
    while True:
        snapshot = (await http.get(f"/api/sessions/{session_id}/snapshot")).json()
        if any(c["tool_name"] == "slow_read" for c in snapshot["tool_calls"]):
            break
        assert asyncio.get_running_loop().time() < deadline, "the slow read never started"
        await asyncio.sleep(0.1)
    await act()
    return chunks(await asyncio.wait_for(streaming, 60))


async def test_a_steered_turn_finishes_with_other_and_a_cancelled_one_aborts(
    http: httpx.AsyncClient,
    scripted_model: ScriptedModelServer,
    assemble: Callable[..., dict[str, Any]],
) -> None:
    session_id = await new_session(http)
    scripted_model.enqueue(
        reply_tools(("call-slow-1", "slow_read", {"seconds": 3})),
        reply_text("About the new question, then."),
    )

    async def steer() -> None:
        steered = await http.post(
            f"/api/sessions/{session_id}/steer", json={"text": "Never mind; something else."}
        )
        assert steered.json() == {"result": True}

    sent = await stream_while(http, session_id, "Look it up slowly.", steer)
    assert sent[-1] == {"type": "finish", "finishReason": "other"}
    assert assemble(events_body(sent))["errors"] == []

    scripted_model.enqueue(reply_tools(("call-slow-2", "slow_read", {"seconds": 3})))

    async def cancel() -> None:
        cancelled = await http.post(f"/api/sessions/{session_id}/cancel", json={})
        assert cancelled.json() == {"result": True}

    sent = await stream_while(http, session_id, "Look it up slowly, again.", cancel)
    assert sent[-1] == {"type": "abort", "reason": "turn_cancelled"}
    assert assemble(events_body(sent))["errors"] == []
    state = (await http.get(f"/api/sessions/{session_id}/snapshot")).json()["state"]
    assert state["active_turn_id"] is None


async def test_a_turn_whose_end_event_is_gone_ends_from_the_committed_state(
    http: httpx.AsyncClient, scripted_model: ScriptedModelServer, db_url: str
) -> None:
    """Events that were written and then removed (an operator pruning the table) never come:
    after an idle wait the stream sees the committed state and ends the turn from it."""
    session_id = await new_session(http)
    scripted_model.enqueue(reply_text("All done."))
    body = await post_chat(http, session_id, [user("Finish this.")])
    first_token = events(body)[0][0]

    engine = sa.create_engine(normalize_url(db_url))
    with engine.begin() as conn:
        removed = conn.execute(
            db.events.delete().where(
                db.events.c.session_id == session_id, db.events.c.type == "turn_completed"
            )
        ).rowcount
    engine.dispose()
    assert removed == 1

    replay = await get_stream(http, session_id, token=first_token)
    sent = chunks(replay.text)
    assert text_of(sent) == "All done."
    # The committed state shows that the turn ended, not how: the finish says no more.
    assert sent[-1] == {"type": "finish", "finishReason": "other"}


def test_reasoning_deltas_become_a_reasoning_part_before_the_text(
    assemble: Callable[..., dict[str, Any]],
) -> None:
    """The translator alone (no server): a model call's reasoning, then its text. The test
    model server streams no reasoning on chat completions, so this feeds the events."""

    def event(offset: int, type: str, payload: dict[str, Any], step: str = "RunModel-3") -> Any:
        return AgentEvent(
            type=type,
            turn_id="turn-1",
            payload=json.dumps(payload),
            step_execution_id=step,
            offset=offset,
        )

    translator = TurnTranslator("turn-1", lambda _call: None)
    sent = translator.start()
    for item in (
        event(1, "turn_started", {"sequence": 1}, step="AwaitUserMessage-2"),
        event(2, "reasoning_delta", {"text": "The user wants "}),
        event(3, "reasoning_delta", {"text": "a greeting."}),
        event(4, "text_delta", {"text": "Hello!"}),
        event(5, "turn_completed", {"message_count": 1}, step="RunModel-3"),
    ):
        sent += translator.feed(item)
    assert shape(sent) == [
        "start",
        "start-step",
        "reasoning-start",
        "reasoning-delta",
        "text-start",  # the reasoning part stays open until the model call's step ends
        "text-delta",
        "reasoning-end",
        "text-end",
        "finish-step",
        "finish",
    ]
    message = assemble(events_body(sent))["message"]
    assert [(p["type"], p.get("text")) for p in message["parts"]] == [
        ("step-start", None),
        ("reasoning", "The user wants a greeting."),
        ("text", "Hello!"),
    ]
