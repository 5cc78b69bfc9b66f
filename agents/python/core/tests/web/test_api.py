"""The session HTTP API through a real `dex-agents serve` process and a real Worker process, on
SQLite and Postgres: RPCs, the snapshot's resume token, Server-Sent Events, auth, bad input."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from dex_agents import AgentClient
from dex_agents.testing import (
    ScriptedModelServer,
    ScriptedReply,
    ServeProcess,
    ToolRunLog,
    WorkerProcess,
    reply_text,
    reply_tools,
)
from dex_agents.web import create_app
from dex_agents.web.app import STATIC_DIR

STEP_ONLY_FIELDS = {
    "framework_item",
    "tool_source_reference",
    "trace_context",
    "input_continuation",
    "input_answers",
    "task_answer_pending",
}


# Helpers ------------------------------------------------------------------------------------


async def start(http: httpx.AsyncClient, message: str | None, **body: Any) -> str:
    response = await http.post(
        "/api/sessions", json={"flow_type": "Assistant", "message": message, **body}
    )
    assert response.status_code == 201, response.text
    session_id: str = response.json()["session_id"]
    return session_id


async def idle_session(http: httpx.AsyncClient, **body: Any) -> str:
    """A started session that waits for its first message."""
    session = await start(http, None, **body)
    await wait_for(http, session, turns_done(0))
    return session


async def snapshot(http: httpx.AsyncClient, session_id: str) -> dict[str, Any]:
    response = await http.get(f"/api/sessions/{session_id}/snapshot")
    assert response.status_code == 200, response.text
    value: dict[str, Any] = response.json()
    return value


async def wait_for(
    http: httpx.AsyncClient,
    session_id: str,
    predicate: Callable[[dict[str, Any]], bool],
    timeout: float = 30.0,
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        snap = await snapshot(http, session_id)
        if predicate(snap):
            return snap
        if time.monotonic() > deadline:
            raise TimeoutError(f"session {session_id} did not get there: {snap['state']}")
        await asyncio.sleep(0.05)


def turns_done(count: int) -> Callable[[dict[str, Any]], bool]:
    return lambda s: (
        s["state"] is not None
        and s["state"]["turn_count"] >= count
        and s["state"]["status"] == "waiting_for_user_message"
    )


def interrupt_pending(interrupt_id: str) -> Callable[[dict[str, Any]], bool]:
    return lambda s: any(i["interrupt_id"] == interrupt_id for i in s["pending_interrupts"])


def keys_anywhere(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in keys_anywhere(v)}
    if isinstance(value, list):
        return {k for v in value for k in keys_anywhere(v)}
    return set()


# The server process ---------------------------------------------------------------------------


def test_serve_process_answers_with_its_token_and_the_workers(server: ServeProcess) -> None:
    response = httpx.get(f"{server.base_url}/api/workers", headers=server.headers)
    assert response.status_code == 200
    assert [w["state"] for w in response.json()] == ["running"]
    assert "Assistant" in response.json()[0]["flow_types"]
    assert server.process is not None and server.process.poll() is None


# RPCs over HTTP -------------------------------------------------------------------------------


async def test_a_turn_with_a_read_and_an_approved_write_runs_each_tool_once(
    http: httpx.AsyncClient, scripted_model: ScriptedModelServer, tools: ToolRunLog
) -> None:
    scripted_model.enqueue(
        reply_tools(
            ("r1", "get_weather", {"city": "Lima"}),
            ("w1", "send_email", {"to": "ana@lima.example", "body": "Hi"}),
        ),
        reply_text("Email sent; sunny in Lima."),
    )
    session = await start(http, "Weather in Lima, then email Ana.")
    waiting = await wait_for(
        http,
        session,
        lambda s: (
            interrupt_pending("w1")(s) and any(c["status"] == "succeeded" for c in s["tool_calls"])
        ),
    )
    assert {c["tool_call_id"]: c["status"] for c in waiting["tool_calls"]} == {
        "r1": "succeeded",
        "w1": "awaiting_approval",
    }
    # Tool calls carry the Step-only fields in the client's snapshot; not here.
    assert not keys_anywhere(waiting) & STEP_ONLY_FIELDS
    (interrupt,) = waiting["pending_interrupts"]
    assert (interrupt["kind"], interrupt["tool_name"]) == ("tool_approval", "send_email")
    assert [e for e in tools.entries("send_email") if e["to"] == "ana@lima.example"] == []
    # The session waits on a person: its status stays running_tools, waiting_for says why.
    assert (waiting["state"]["status"], waiting["waiting_for"]) == ("running_tools", "approval")
    listed = (await http.get("/api/sessions")).json()
    assert next(s for s in listed if s["session_id"] == session)["waiting_for"] == "approval"

    resolve = f"/api/sessions/{session}/interrupts/w1/resolve"
    assert (await http.post(resolve, json={"approved": True})).json() == {"result": True}
    # The interrupt is no longer pending: the RPC's false, not an error.
    second = await http.post(resolve, json={"approved": False})
    assert (second.status_code, second.json()) == (200, {"result": False})
    done = await wait_for(http, session, turns_done(1))
    assert done["waiting_for"] is None

    assert len([e for e in tools.entries("send_email") if e["to"] == "ana@lima.example"]) == 1
    assert len([e for e in tools.entries("get_weather") if e["city"] == "Lima"]) == 1
    assert done["messages"][-1]["text"] == "Email sent; sunny in Lima."
    steps = (await http.get(f"/api/sessions/{session}/steps")).json()
    assert [s["step_type"] for s in steps] == [
        "StartAgentSession",
        "RunModel",
        "CallTool",
        "AwaitToolApproval",
        "ResumeTurn",
        "CallSingleAttemptTool",
        "RunModel",
        "AwaitUserMessage",
    ]
    assert all(s["status"] == "succeeded" for s in steps[:-1])


async def test_the_snapshot_has_no_step_only_fields_and_a_resume_token(
    http: httpx.AsyncClient, scripted_model: ScriptedModelServer
) -> None:
    scripted_model.enqueue(
        reply_tools(("r1", "get_weather", {"city": "Quito"})), reply_text("Sunny.")
    )
    session = await start(http, "Weather in Quito?")
    snap = await wait_for(http, session, turns_done(1))

    assert (snap["session_id"], snap["flow_type"]) == (session, "Assistant")
    assert not keys_anywhere(snap) & STEP_ONLY_FIELDS
    assert [m["role"] for m in snap["messages"]] == ["user", "assistant", "tool", "assistant"]
    token = snap["resume_token"]
    assert isinstance(token, str) and token.isdigit()
    # Idle: the token is the last event, so nothing follows it.
    events = await read_stream(http, session, after=int(token) - 1, until=lambda e: True)
    assert [e["offset"] for e in events] == [int(token)]
    assert events[0]["type"] == "turn_completed"

    page = (await http.get(f"/api/sessions/{session}/messages", params={"limit": 2})).json()
    assert [m["sequence"] for m in page["messages"]] == [3, 4]
    assert page["next_before_sequence"] == 3
    assert not keys_anywhere(page) & STEP_ONLY_FIELDS
    older = await http.get(
        f"/api/sessions/{session}/messages", params={"before_sequence": 3, "limit": 50}
    )
    assert [m["role"] for m in older.json()["messages"]] == ["user", "assistant"]


async def test_a_question_is_answered_over_http(
    http: httpx.AsyncClient, scripted_model: ScriptedModelServer
) -> None:
    question = {"question": "Which city?", "choices": ["Oslo", "Rome"]}
    scripted_model.enqueue(reply_tools(("q1", "ask_user", question)), reply_text("Rome it is."))
    session = await start(http, "Plan a trip", flow_type="Planner")
    waiting = await wait_for(http, session, interrupt_pending("q1"))
    assert waiting["pending_interrupts"][0]["choices"] == ["Oslo", "Rome"]
    assert waiting["waiting_for"] == "answer"

    base = f"/api/sessions/{session}/interrupts/q1"
    assert (await http.post(f"{base}/resolve", json={"approved": True})).json() == {"result": False}
    assert (await http.post(f"{base}/answer", json={"answer": "Rome"})).json() == {"result": True}
    done = await wait_for(http, session, turns_done(1))
    assert done["messages"][-1]["text"] == "Rome it is."
    assert (await http.post(f"{base}/answer", json={"answer": "Oslo"})).json() == {"result": False}


async def test_steer_redirects_a_running_turn(
    http: httpx.AsyncClient, scripted_model: ScriptedModelServer
) -> None:
    seen = len(scripted_model.requests)
    scripted_model.enqueue(
        ScriptedReply(text="Paris is lovely.", hang=True), reply_text("Rome, then.")
    )
    session = await start(http, "Tell me about Paris")
    await asyncio.to_thread(scripted_model.wait_for_requests, seen + 1)
    steer = await http.post(f"/api/sessions/{session}/steer", json={"text": "Actually, Rome"})
    assert steer.json() == {"result": True}
    scripted_model.release()
    done = await wait_for(http, session, turns_done(2))
    assert [(m["role"], m["text"]) for m in done["messages"]] == [
        ("user", "Tell me about Paris"),
        ("assistant", "Paris is lovely."),
        ("user", "Actually, Rome"),
        ("assistant", "Rome, then."),
    ]


async def test_cancel_stops_the_active_turn(
    http: httpx.AsyncClient, scripted_model: ScriptedModelServer
) -> None:
    seen = len(scripted_model.requests)
    scripted_model.enqueue(ScriptedReply(text="A very long answer", hang=True))
    session = await start(http, "Talk for a long time")
    await asyncio.to_thread(scripted_model.wait_for_requests, seen + 1)
    cancel = f"/api/sessions/{session}/cancel"
    assert (await http.post(cancel, json={"turn_id": "turn-9"})).json() == {"result": False}
    assert (await http.post(cancel, json={"turn_id": None})).json() == {"result": True}
    scripted_model.release()
    await wait_for(http, session, lambda s: s["state"]["active_turn_id"] is None)
    events = await read_stream(http, session, until=lambda e: e["type"] == "turn_cancelled")
    assert events[-1]["turn_id"] == "turn-1"
    steps = [s["step_type"] for s in (await http.get(f"/api/sessions/{session}/steps")).json()]
    assert "FinishTurnCancellation" in steps
    assert (await http.post(cancel)).json() == {"result": False}  # no body: any active turn


async def test_queued_messages_settings_and_the_session_list(
    http: httpx.AsyncClient, scripted_model: ScriptedModelServer
) -> None:
    seen = len(scripted_model.requests)
    scripted_model.enqueue(ScriptedReply(text="First.", hang=True), reply_text("Second."))
    session = await start(http, "One", session_settings={"tone": "dry"})
    await asyncio.to_thread(scripted_model.wait_for_requests, seen + 1)
    for text in ("Two", "Three"):
        sent = await http.post(f"/api/sessions/{session}/messages", json={"text": text})
        assert sent.json()["result"] is True
    queued = (await snapshot(http, session))["queued_messages"]
    assert [q["message"]["text"] for q in queued] == ["Two", "Three"]
    delete = f"/api/sessions/{session}/queued-messages/{queued[1]['message_id']}"
    assert (await http.delete(delete)).json() == {"result": True}
    assert (await http.delete(delete)).json() == {"result": False}

    settings = f"/api/sessions/{session}/settings"
    assert (await http.put(settings, json={"session_settings": {"tone": "warm"}})).json() == {
        "result": True
    }
    scripted_model.release()
    done = await wait_for(http, session, turns_done(2))
    assert [m["text"] for m in done["messages"] if m["role"] == "user"] == ["One", "Two"]
    assert done["session_settings"] == {"tone": "warm"}
    plan = await http.post(f"/api/sessions/{session}/plan/execute", json={"revision": 1})
    assert plan.json() == {"result": False}  # the Assistant has no plan

    listed = (await http.get("/api/sessions", params={"limit": 1})).json()
    assert [s["session_id"] for s in listed] == [session]
    assert listed[0]["turn_count"] == 2 and listed[0]["flow_type"] == "Assistant"


# Server-Sent Events ---------------------------------------------------------------------------


def parse_sse(lines: list[str]) -> tuple[list[tuple[str | None, str]], int]:
    """The (id, data) of each event and how many comment lines came."""
    events: list[tuple[str | None, str]] = []
    comments = 0
    event_id: str | None = None
    data: list[str] = []
    for line in lines:
        if line.startswith(":"):
            comments += 1
        elif line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif line == "" and data:
            events.append((event_id, "\n".join(data)))
            event_id, data = None, []
        elif line.startswith("event:"):
            raise AssertionError(f"an event field: {line}")
    return events, comments


async def read_stream(
    http: httpx.AsyncClient,
    session_id: str,
    *,
    until: Callable[[dict[str, Any]], bool],
    after: int | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 30.0,
) -> list[dict[str, Any]]:
    """Events from the SSE stream until one satisfies `until`; checks each id is its offset."""
    params = {} if after is None else {"after": str(after)}
    lines: list[str] = []
    async with asyncio.timeout(timeout):
        url = f"/api/sessions/{session_id}/events"
        async with http.stream("GET", url, params=params, headers=headers) as response:
            assert response.status_code == 200, await response.aread()
            assert response.headers["content-type"].startswith("text/event-stream")
            async for line in response.aiter_lines():
                lines.append(line)
                events, _ = parse_sse(lines)
                if events and until(json.loads(events[-1][1])):
                    break
    result = []
    for event_id, data in parse_sse(lines)[0]:
        event = json.loads(data)
        assert event_id == str(event["offset"])
        assert isinstance(event["payload"], dict)
        result.append(event)
    return result


async def test_events_arrive_live_and_resume_exactly_after_last_event_id(
    http: httpx.AsyncClient, scripted_model: ScriptedModelServer
) -> None:
    session = await start(http, None)
    await wait_for(http, session, lambda s: s["state"] is not None)
    token = int((await snapshot(http, session))["resume_token"])
    follower = asyncio.create_task(
        read_stream(http, session, after=token, until=lambda e: e["type"] == "turn_completed")
    )
    await asyncio.sleep(0.5)  # the stream is open before the turn begins
    assert not follower.done()
    scripted_model.enqueue(
        reply_tools(("r1", "get_weather", {"city": "Cusco"})), reply_text("Dry.")
    )
    sent = await http.post(f"/api/sessions/{session}/messages", json={"text": "Cusco?"})
    assert sent.json()["result"] is True
    # The answer names the message and the offset after which its turn starts.
    turn_started = next(e for e in await follower if e["type"] == "turn_started")
    assert turn_started["payload"]["message_id"] == sent.json()["message_id"]
    assert sent.json()["event_offset"] >= token
    live = await follower

    offsets = [e["offset"] for e in live]
    assert offsets == list(range(token + 1, token + 1 + len(offsets)))
    types = [e["type"] for e in live]
    assert types[0] == "turn_started" and types[-1] == "turn_completed"
    assert "tool_call_finished" in types

    middle = live[len(live) // 2]["offset"]
    resumed = await read_stream(
        http,
        session,
        after=0,  # Last-Event-ID wins, as a reconnecting EventSource sends it
        headers={"Last-Event-ID": str(middle)},
        until=lambda e: e["type"] == "turn_completed",
    )
    assert [e["offset"] for e in resumed] == [o for o in offsets if o > middle]
    assert resumed == [e for e in live if e["offset"] > middle]


async def test_an_idle_stream_sends_heartbeats(http: httpx.AsyncClient) -> None:
    session = await start(http, None)
    token = (await snapshot(http, session))["resume_token"]
    lines: list[str] = []
    async with asyncio.timeout(10):
        url = f"/api/sessions/{session}/events"
        async with http.stream("GET", url, params={"after": token}) as response:
            async for line in response.aiter_lines():
                lines.append(line)
                if parse_sse(lines)[1] >= 2:
                    break
    assert parse_sse(lines) == ([], 2)


@pytest.mark.parametrize(
    ("where", "token"),
    [
        ("after", "-1"),
        ("after", "abc"),
        ("after", "1e3"),
        ("after", " 1"),
        ("after", "99999"),
        ("after", "99999999999999999999"),
        ("Last-Event-ID", "x"),
        ("Last-Event-ID", "5000"),
    ],
)
async def test_a_bad_or_future_resume_token_gets_400_json_before_the_stream(
    http: httpx.AsyncClient, where: str, token: str
) -> None:
    session = await start(http, None)
    url = f"/api/sessions/{session}/events"
    if where == "after":
        response = await http.get(url, params={"after": token})
    else:
        response = await http.get(url, headers={"Last-Event-ID": token})
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert (error["code"], error["field"]) == ("invalid_resume_token", where)
    missing = await http.get("/api/sessions/no-such-session/events")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "session_not_found"


async def test_the_stream_takes_a_session_token_as_access_token(server: ServeProcess) -> None:
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as bare:
        authed = httpx.AsyncClient(base_url=server.base_url, headers=server.headers)
        async with authed:
            session = await start(authed, None)
            minted = await authed.post(f"/api/sessions/{session}/tokens")
        token = minted.json()["token"]
        url = f"/api/sessions/{session}/events"
        async with bare.stream("GET", url, params={"access_token": token}) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
        # The server's token never in a URL: it says to mint a session token.
        refused = await bare.get(url, params={"access_token": server.token})
        assert refused.status_code == 401
        assert "mint a session token" in refused.json()["error"]["message"]
        wrong = await bare.get(url, params={"access_token": "wrong"})
        assert wrong.status_code == 401
        # Only event streams take it: other endpoints need the header.
        listed = await bare.get("/api/sessions", params={"access_token": token})
        assert listed.status_code == 401
        post = await bare.post(f"/api/sessions/{session}/cancel", params={"access_token": token})
        assert post.status_code == 401


# Auth -----------------------------------------------------------------------------------------

# One request of each kind of endpoint: read, write, delete, put, stream, workers.
ENDPOINTS = [
    ("GET", "/api/sessions", None),
    ("POST", "/api/sessions", {"flow_type": "Assistant"}),
    ("GET", "/api/sessions/{id}/snapshot", None),
    ("GET", "/api/sessions/{id}/messages", None),
    ("POST", "/api/sessions/{id}/messages", {"text": "hi"}),
    ("POST", "/api/sessions/{id}/steer", {"text": "hi"}),
    ("DELETE", "/api/sessions/{id}/queued-messages/1", None),
    ("POST", "/api/sessions/{id}/cancel", {}),
    ("POST", "/api/sessions/{id}/interrupts/i1/resolve", {"approved": True}),
    ("POST", "/api/sessions/{id}/interrupts/i1/answer", {"answer": "x"}),
    ("POST", "/api/sessions/{id}/plan/execute", {"revision": 1}),
    ("PUT", "/api/sessions/{id}/settings", {"session_settings": {}}),
    ("GET", "/api/sessions/{id}/steps", None),
    ("GET", "/api/sessions/{id}/events", None),
    ("GET", "/api/workers", None),
]


async def test_every_endpoint_refuses_a_missing_or_wrong_token(
    http: httpx.AsyncClient, server: ServeProcess
) -> None:
    session = await idle_session(http)
    before = await snapshot(http, session)
    sessions_before = len((await http.get("/api/sessions")).json())
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": server.token}):
        async with httpx.AsyncClient(base_url=server.base_url, headers=headers) as other:
            for method, path, body in ENDPOINTS:
                url = path.replace("{id}", session)
                response = await other.request(method, url, json=body)
                assert response.status_code == 401, (method, url, headers)
                assert response.headers["www-authenticate"] == "Bearer"
                assert response.json()["error"]["code"] == "unauthorized"
    assert await snapshot(http, session) == before
    assert len((await http.get("/api/sessions")).json()) == sessions_before
    # The viewer's page holds no data and needs no token.
    async with httpx.AsyncClient(base_url=server.base_url) as bare:
        page = await bare.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    if (STATIC_DIR / "index.html").is_file():
        assert page.text == (STATIC_DIR / "index.html").read_text()
    else:
        assert "npm --prefix agents/python/core/web run build" in page.text


def test_create_app_without_any_auth_says_what_to_pass() -> None:
    with pytest.raises(ValueError, match=r"pass token=.*auth=.*allow_unauthenticated=True"):
        create_app("sqlite:///unused.sqlite")


# Bad input ------------------------------------------------------------------------------------

LONG_ID = "s" * 256
# One session per server that every bad request targets.
_TARGETS: dict[str, str] = {}


async def bad_input_session(http: httpx.AsyncClient) -> str:
    key = str(http.base_url)
    if key not in _TARGETS:
        _TARGETS[key] = await idle_session(http, session_settings={"tone": "dry"})
    return _TARGETS[key]


TOO_LARGE = "x" * (1_048_576 + 1)


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "field"),
    [
        (
            "POST",
            "/api/sessions",
            {"flow_type": "Assistant", "session_id": "  "},
            400,
            "session_id",
        ),
        (
            "POST",
            "/api/sessions",
            {"flow_type": "Assistant", "session_id": LONG_ID},
            400,
            "session_id",
        ),
        ("POST", "/api/sessions", {"flow_type": "A\u0007"}, 400, "flow_type"),
        ("POST", "/api/sessions", {"flow_type": 5}, 422, "flow_type"),
        ("POST", "/api/sessions", {"flow_type": "Assistant", "extra": 1}, 422, "extra"),
        (
            "POST",
            "/api/sessions",
            {"flow_type": "Assistant", "message": TOO_LARGE},
            413,
            "message",
        ),
        ("POST", "/api/sessions/{id}/messages", {"text": " \n "}, 400, "text"),
        ("POST", "/api/sessions/{id}/messages", {"text": TOO_LARGE}, 413, "text"),
        ("POST", "/api/sessions/{id}/messages", {"text": 5}, 422, "text"),
        (
            "POST",
            "/api/sessions/{id}/messages",
            {"text": "hi", "plan_mode": "yes"},
            422,
            "plan_mode",
        ),
        ("POST", "/api/sessions/{id}/messages", {}, 422, "text"),
        ("POST", "/api/sessions/{id}/messages", "not json", 422, None),
        ("POST", "/api/sessions/{id}/steer", {"text": "  "}, 400, "text"),
        ("POST", "/api/sessions/{id}/steer", {"message_id": ""}, 400, "message_id"),
        ("POST", "/api/sessions/{id}/interrupts/i1/resolve", {"approved": 1}, 422, "approved"),
        ("POST", "/api/sessions/{id}/interrupts/i1/resolve", {"approved": "NaN"}, 422, "approved"),
        ("POST", "/api/sessions/{id}/interrupts/%20/answer", {"answer": "x"}, 400, "interrupt_id"),
        ("POST", "/api/sessions/{id}/plan/execute", '{"revision": NaN}', 422, "revision"),
        ("POST", "/api/sessions/{id}/plan/execute", {"revision": 2**40}, 400, "revision"),
        ("PUT", "/api/sessions/{id}/settings", '{"session_settings": {"t": NaN}}', 400, None),
        ("PUT", "/api/sessions/{id}/settings", {"session_settings": [1]}, 422, "session_settings"),
        ("GET", "/api/sessions/{id}/messages?limit=abc", None, 422, "limit"),
        ("GET", "/api/sessions/{id}/messages?before_sequence=1.5", None, 422, "before_sequence"),
        ("GET", "/api/sessions?limit=0", None, 400, "limit"),
        ("GET", "/api/sessions/a%00b/snapshot", None, 400, "session_id"),
        ("GET", "/api/sessions/no-such-session/snapshot", None, 404, "session_id"),
        ("POST", "/api/sessions/no-such-session/messages", {"text": "hi"}, 404, "session_id"),
    ],
)
async def test_bad_input_gets_a_4xx_error_and_changes_nothing(
    http: httpx.AsyncClient,
    method: str,
    path: str,
    body: Any,
    status: int,
    field: str | None,
) -> None:
    session = await bad_input_session(http)
    before = await snapshot(http, session)
    sessions_before = (await http.get("/api/sessions", params={"limit": 1000})).json()
    url = path.replace("{id}", session)
    if isinstance(body, str):
        response = await http.request(
            method, url, content=body, headers={"Content-Type": "application/json"}
        )
    else:
        response = await http.request(method, url, json=body)

    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"code", "message", "field"} and error["message"]
    if field is not None:
        assert error["field"] == field
    assert await snapshot(http, session) == before
    assert (await http.get("/api/sessions", params={"limit": 1000})).json() == sessions_before


async def test_a_session_of_a_flow_type_no_worker_hosts_starts_with_a_warning(
    http: httpx.AsyncClient,
) -> None:
    hosted = await http.post("/api/sessions", json={"flow_type": "Assistant"})
    assert hosted.status_code == 201 and "warning" not in hosted.json()
    unhosted = await http.post("/api/sessions", json={"flow_type": "Nobody", "message": "Hi"})
    assert unhosted.status_code == 201
    body = unhosted.json()
    assert body["warning"].startswith("no live Worker hosts flow type 'Nobody' (live Workers host")
    waiting = await snapshot(http, body["session_id"])
    assert (waiting["flow_type"], waiting["state"]) == ("Nobody", None)


async def test_a_session_id_in_use_gets_409(http: httpx.AsyncClient) -> None:
    session = await start(http, None)
    again = await http.post("/api/sessions", json={"flow_type": "Planner", "session_id": session})
    assert again.status_code == 409
    assert again.json()["error"] == {
        "code": "session_exists",
        "message": f"a session with ID {session!r} already exists",
        "field": "session_id",
    }
    assert (await snapshot(http, session))["flow_type"] == "Assistant"


# Many followers, one wake feed ----------------------------------------------------------------

FOLLOWERS = 200


@contextlib.asynccontextmanager
async def in_process_server(app: Any) -> AsyncIterator[str]:
    """The app under uvicorn in this event loop, on a free loopback port: its base URL."""
    sock = socket.create_server(("127.0.0.1", 0), backlog=1024)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await task
        sock.close()


def wake_feeds() -> list[asyncio.Task[Any]]:
    return [
        t
        for t in asyncio.all_tasks()
        if not t.done() and t.get_coro().__qualname__ == "Waker.poll_forever"  # type: ignore[union-attr]
    ]


async def test_200_followers_of_a_session_get_the_same_events_through_one_wake_feed(
    db_url: str, worker: WorkerProcess, scripted_model: ScriptedModelServer
) -> None:
    client = AgentClient(db_url)
    app = create_app(client=client, token="t0ken")
    headers = {"Authorization": "Bearer t0ken"}
    limits = httpx.Limits(max_connections=FOLLOWERS + 10)
    async with (
        in_process_server(app) as base_url,
        httpx.AsyncClient(base_url=base_url, headers=headers, limits=limits, timeout=60) as http,
    ):
        session = await idle_session(http)
        token = int((await snapshot(http, session))["resume_token"])
        done = lambda e: e["type"] == "turn_completed"  # noqa: E731
        followers = [
            asyncio.create_task(read_stream(http, session, after=token, until=done, timeout=90))
            for _ in range(FOLLOWERS)
        ]
        # The first follower's wait starts the one feed; on a busy machine that takes a while.
        deadline = time.monotonic() + 30
        while not wake_feeds() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert not any(f.done() for f in followers)
        assert len(wake_feeds()) == 1
        feed = client._wake_task
        scripted_model.enqueue(
            reply_tools(("r1", "get_weather", {"city": "Sucre"})), reply_text("Mild.")
        )
        started = time.monotonic()
        sent = await http.post(f"/api/sessions/{session}/messages", json={"text": "Sucre?"})
        assert sent.json()["result"] is True
        received = await asyncio.gather(*followers)
        elapsed = time.monotonic() - started

        expected = await read_stream(http, session, after=token, until=done)
        assert len(expected) >= 5
        assert all(events == expected for events in received)
        assert elapsed < 60
        assert len(wake_feeds()) == 1 and client._wake_task is feed
    await client.close()


# dex-agents serve -----------------------------------------------------------------------------


def test_serve_prints_a_clickable_url_with_a_new_token_and_stops_on_ctrl_c(
    tmp_path: Path,
) -> None:
    command = [sys.executable, "-m", "dex_agents", "serve", "--port", "0"]
    command += ["--database-url", f"sqlite:///{tmp_path / 'dex.sqlite'}"]
    env = {k: v for k, v in os.environ.items() if k != "DEX_AGENTS_WEB_TOKEN"}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode()
        match = re.fullmatch(r"dex-agents viewer: (http://127\.0\.0\.1:\d+/)#token=(\S+)\n", line)
        assert match, line
        base_url, token = match.groups()
        listed = httpx.get(f"{base_url}api/sessions", headers={"Authorization": f"Bearer {token}"})
        assert (listed.status_code, listed.json()) == (200, [])
        assert httpx.get(f"{base_url}api/sessions").status_code == 401
        auth = {"Authorization": f"Bearer {token}"}
        body = {"flow_type": "Assistant", "session_id": "s1"}
        assert httpx.post(f"{base_url}api/sessions", json=body, headers=auth).status_code == 201
        # An open event stream does not hold the stop up.
        with httpx.stream("GET", f"{base_url}api/sessions/s1/events", headers=auth) as stream:
            assert stream.status_code == 200
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=5) == 0
        assert process.stderr is not None
        assert b"Error" not in process.stderr.read()
    finally:
        process.kill()
        process.wait()


def test_serve_says_in_one_line_what_is_wrong_with_the_database_url() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "dex_agents", "serve", "--database-url", "nosuch://db"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.startswith("error: cannot use the database URL nosuch://db")
    assert result.stderr.count("\n") == 1 and result.stdout == ""


async def test_openapi_documents_every_endpoint_without_step_only_fields(
    server: ServeProcess,
) -> None:
    schema = httpx.get(f"{server.base_url}/openapi.json").json()
    routes = {(m.upper(), p) for p, ops in schema["paths"].items() for m in ops}
    for method, path, _ in ENDPOINTS:
        documented = path.replace("{id}", "{session_id}").replace("/i1/", "/{interrupt_id}/")
        documented = documented.replace("/queued-messages/1", "/queued-messages/{message_id}")
        assert (method, documented) in routes
        assert schema["paths"][documented][method.lower()]["summary"]
    components = schema["components"]["schemas"]
    for name in ("Snapshot", "Message", "ToolCall", "MessagesPage"):
        assert not set(components[name]["properties"]) & STEP_ONLY_FIELDS
    assert {"resume_token", "session_id", "flow_type"} <= set(components["Snapshot"]["properties"])
    assert components["ErrorBody"]["properties"]["error"]


async def test_a_mounted_app_with_its_own_auth_check(db_url: str, worker: WorkerProcess) -> None:
    async def only_ana(request: Any) -> bool:
        return bool(request.headers.get("x-user") == "ana")

    client = AgentClient(db_url)
    parent = FastAPI()
    parent.mount("/agents", create_app(client=client, auth=only_ana))
    async with in_process_server(parent) as base_url, httpx.AsyncClient(base_url=base_url) as http:
        refused = await http.get("/agents/api/workers", headers={"X-User": "bob"})
        assert refused.status_code == 401
        accepted = await http.get("/agents/api/workers", headers={"X-User": "ana"})
        assert accepted.status_code == 200
        assert [w["worker_id"] for w in accepted.json()] == [worker.worker_id]
    await client.close()
