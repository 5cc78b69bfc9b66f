"""Who reaches what over HTTP, through a real `dex-agents serve` process and httpx: session
tokens (minted over HTTP and in Python) open one session's routes and nothing else; the
server's token is refused in a URL; forged, altered and expired tokens get 401; a session ID
that a route could not address is refused at every entry point (HTTP, Python, CLI).

No Worker runs: every route answers from the database (a message is queued, a cancel or an
unknown interrupt answers false), which is all access control needs."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from dex_agents import AgentClient
from dex_agents.errors import InvalidInputError
from dex_agents.policy import tool_call_id_problem
from dex_agents.testing import ServeProcess
from dex_agents.web import create_app, mint_session_token
from dex_agents.web.auth import SESSION_TOKEN_ROUTES


@pytest.fixture(scope="module")
def db_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"sqlite:///{tmp_path_factory.mktemp('access') / 'dex.sqlite'}"


@pytest.fixture(scope="module")
def server(db_url: str) -> Iterator[ServeProcess]:
    with ServeProcess(db_url) as serve:
        yield serve


@pytest.fixture
async def http(server: ServeProcess) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        base_url=server.base_url, headers=server.headers, timeout=30.0
    ) as client:
        yield client


@pytest.fixture
async def bare(server: ServeProcess) -> AsyncIterator[httpx.AsyncClient]:
    """A client with no credentials of its own: a browser holding only what it was given."""
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30.0) as client:
        yield client


async def start(http: httpx.AsyncClient) -> str:
    response = await http.post("/api/sessions", json={"flow_type": "Assistant"})
    assert response.status_code == 201, response.text
    session_id: str = response.json()["session_id"]
    return session_id


async def mint(http: httpx.AsyncClient, session_id: str, **body: Any) -> str:
    response = await http.post(f"/api/sessions/{session_id}/tokens", json=body or None)
    assert response.status_code == 200, response.text
    token: str = response.json()["token"]
    return token


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def error_of(response: httpx.Response, status: int, code: str) -> str:
    """The error's message, after checking its status and the API's error shape."""
    assert response.status_code == status, (response.request.url, response.text)
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert set(error) == {"code", "message", "field"} and error["code"] == code
    message: str = error["message"]
    return message


# What a session token opens: one request per route, and the status it gets.
OPENED = [
    ("GET", "/snapshot", None, 200),
    ("GET", "/messages", None, 200),
    ("POST", "/messages", {"text": "hi"}, 200),
    ("POST", "/steer", {"text": "redirect"}, 200),
    ("POST", "/cancel", {}, 200),
    ("POST", "/interrupts/i1/resolve", {"approved": True}, 200),
    ("POST", "/interrupts/i1/answer", {"answer": "x"}, 200),
    ("GET", "/ui-messages", None, 200),
    ("GET", "/chat/stream", None, 204),
]
# What it does not: every other route of its own session, and the server-wide ones.
CLOSED = [
    ("GET", "/steps", None),
    ("PUT", "/settings", {"session_settings": {}}),
    ("POST", "/plan/execute", {"revision": 1}),
    ("DELETE", "/queued-messages/m1", None),
    ("POST", "/tokens", None),
]
SERVER_WIDE = [
    ("GET", "/api/sessions", None),
    ("POST", "/api/sessions", {"flow_type": "Assistant"}),
    ("GET", "/api/workers", None),
]


async def test_a_session_token_opens_its_session_and_nothing_else(
    http: httpx.AsyncClient, bare: httpx.AsyncClient
) -> None:
    session, other = await start(http), await start(http)
    token = await mint(http, session)
    headers = bearer(token)
    for method, route, body, status in OPENED:
        url = f"/api/sessions/{session}{route}"
        response = await bare.request(method, url, json=body, headers=headers)
        assert response.status_code == status, (method, url, response.text)
    snapshot = (await http.get(f"/api/sessions/{session}/snapshot")).json()
    assert [m["message"]["text"] for m in snapshot["queued_messages"]] == ["hi", "redirect"]
    # The event stream, with the token in the header and in the URL.
    events = f"/api/sessions/{session}/events"
    for params, sent in (({}, headers), ({"access_token": token}, {})):
        async with bare.stream("GET", events, params=params, headers=sent) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
    # `useChat`'s POST: the response is the turn's stream (no Worker runs it here).
    chat_body = {"id": session, "messages": [{"role": "user", "parts": [{"text": "hey"}]}]}
    chat = f"/api/sessions/{session}/chat"
    async with bare.stream("POST", chat, json=chat_body, headers=headers) as stream:
        assert stream.status_code == 200
        assert stream.headers["x-vercel-ai-ui-message-stream"] == "v1"

    for method, route, body, _ in OPENED:
        url = f"/api/sessions/{other}{route}"
        response = await bare.request(method, url, json=body, headers=headers)
        assert "for another session" in error_of(response, 403, "forbidden")
    for method, route, body in CLOSED:
        url = f"/api/sessions/{session}{route}"
        response = await bare.request(method, url, json=body, headers=headers)
        assert "needs the server's token" in error_of(response, 403, "forbidden")
    for method, url, body in SERVER_WIDE:
        response = await bare.request(method, url, json=body, headers=headers)
        error_of(response, 403, "forbidden")
    listed = (await http.get("/api/sessions", params={"limit": 1000})).json()
    assert len(listed) == 2  # the refused start created nothing
    assert (await http.get(f"/api/sessions/{other}/snapshot")).json()["queued_messages"] == []


async def test_the_server_token_is_refused_in_a_url(
    server: ServeProcess, http: httpx.AsyncClient, bare: httpx.AsyncClient
) -> None:
    session = await start(http)
    for route, opened in (("/events", 200), ("/chat/stream", 204)):
        url = f"/api/sessions/{session}{route}"
        response = await bare.get(url, params={"access_token": server.token})
        message = error_of(response, 401, "unauthorized")
        assert "not accepted in a URL" in message and "/tokens" in message
        assert response.json()["error"]["field"] == "access_token"
        # In the header it opens the route.
        async with http.stream("GET", url) as stream:
            assert stream.status_code == opened


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


async def test_forged_altered_and_expired_tokens_get_401(
    server: ServeProcess, http: httpx.AsyncClient, bare: httpx.AsyncClient
) -> None:
    session, other = await start(http), await start(http)
    token = await mint(http, session)
    prefix, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert claims["v"] == 1 and claims["sid"] == session
    assert claims["exp"] > time.time()
    # The payload for the other session, or a later expiry, under the same signature.
    moved = _b64(json.dumps({**claims, "sid": other}, separators=(",", ":")).encode())
    later = _b64(json.dumps({**claims, "exp": claims["exp"] + 10**6}).encode())
    flipped = signature[:-2] + ("AA" if signature[-2:] != "AA" else "BA")
    forged = [
        f"{prefix}.{moved}.{signature}",
        f"{prefix}.{later}.{signature}",
        f"{prefix}.{payload}.{flipped}",
        f"{prefix}.{payload}",
        f"{prefix}.{payload}.{signature}.x",
        "dxs1.%%%.###",
        mint_session_token("another server's token", session).token,
        f"dxs1.{'A' * 5000}.x",
    ]
    for target in (session, other):
        url = f"/api/sessions/{target}/snapshot"
        for fake in forged:
            response = await bare.get(url, headers=bearer(fake))
            assert error_of(response, 401, "unauthorized") == (
                "the session token is not valid for this server"
            ), fake
    expired = mint_session_token(server.token, session, expires_in=60, now=time.time() - 61)
    url = f"/api/sessions/{session}/events"
    response = await bare.get(url, params={"access_token": expired.token})
    assert "has expired" in error_of(response, 401, "unauthorized")
    # A token minted in Python with the server's token is as good as one minted over HTTP.
    fresh = mint_session_token(server.token, session, expires_in=5)
    read = await bare.get(f"/api/sessions/{session}/snapshot", headers=bearer(fresh.token))
    assert read.json()["session_id"] == session


async def test_minting_takes_the_server_token_a_known_session_and_a_bounded_life(
    http: httpx.AsyncClient, bare: httpx.AsyncClient
) -> None:
    session = await start(http)
    before = time.time()
    response = await http.post(f"/api/sessions/{session}/tokens", json={"expires_in": 120})
    assert response.status_code == 200
    minted = response.json()
    assert set(minted) == {"token", "session_id", "expires_at"}
    assert minted["session_id"] == session and minted["expires_at"].endswith("Z")
    expires = time.mktime(time.strptime(minted["expires_at"], "%Y-%m-%dT%H:%M:%SZ"))
    expires -= time.timezone
    assert before + 119 <= expires <= time.time() + 121
    for body in ({"expires_in": 0}, {"expires_in": 86_401}, {"expires_in": "60"}, {"x": 1}):
        refused = await http.post(f"/api/sessions/{session}/tokens", json=body)
        error_of(refused, 422, "invalid_request")
    error_of(await http.post("/api/sessions/no-such/tokens"), 404, "session_not_found")
    error_of(await bare.post(f"/api/sessions/{session}/tokens"), 401, "unauthorized")
    with pytest.raises(InvalidInputError, match="at most 86,400 seconds"):
        mint_session_token("secret", session, expires_in=86_401)


def test_every_route_a_session_token_opens_exists() -> None:
    paths = create_app("sqlite:///unused.sqlite", token="t").openapi()["paths"]
    for name, (method, path) in SESSION_TOKEN_ROUTES.items():
        assert paths[path][method.lower()]["operationId"].startswith(f"{name}_"), name
    assert paths["/api/sessions/{session_id}/tokens"]["post"]["operationId"].startswith(
        "mint_token_"
    )


# Session IDs every route can address ----------------------------------------------------------

UNADDRESSABLE = ["a/b", "/", "x/", ".", ".."]


async def test_a_session_id_no_route_could_address_is_refused(
    db_url: str, server: ServeProcess, http: httpx.AsyncClient
) -> None:
    before = (await http.get("/api/sessions", params={"limit": 1000})).json()
    for session_id in UNADDRESSABLE:
        body = {"flow_type": "Assistant", "session_id": session_id}
        response = await http.post("/api/sessions", json=body)
        assert error_of(response, 400, "invalid_input")
        assert response.json()["error"]["field"] == "session_id"
    async with AgentClient(db_url) as client:
        for session_id in UNADDRESSABLE:
            with pytest.raises(InvalidInputError) as refused:
                await client.start_session("Assistant", session_id=session_id)
            assert refused.value.argument == "session_id"
    for session_id in ("a/b", ".."):
        command = [sys.executable, "-m", "dex_agents", "start", "Assistant"]
        command += ["--session-id", session_id, "--database-url", db_url]
        result = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert result.returncode == 1, result
        assert result.stderr.startswith("error: session_id"), result.stderr
    assert (await http.get("/api/sessions", params={"limit": 1000})).json() == before
    # An ID with the characters around '/' is fine, and every route reaches it.
    fine = "a.b:c d%2F?#é"
    response = await http.post("/api/sessions", json={"flow_type": "Assistant", "session_id": fine})
    assert response.status_code == 201
    path = f"/api/sessions/{quote(fine, safe='')}"
    assert (await http.get(f"{path}/snapshot")).json()["session_id"] == fine
    assert (await http.post(f"{path}/cancel", json={})).json() == {"result": False}
    assert (await http.post(f"{path}/tokens")).status_code == 200


def test_the_rule_is_the_tool_call_id_rule() -> None:
    for value in UNADDRESSABLE:
        assert tool_call_id_problem(value, set()) is not None
