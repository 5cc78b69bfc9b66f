"""The scripted Anthropic server speaks the Messages API over real HTTP."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from typing import Any

import httpx

from dex_agents.testing import (
    ScriptedAnthropicServer,
    anthropic_text,
    anthropic_tools,
)
from dex_agents.testing.anthropic_server import no_tools

TOOLS = [{"name": "lookup", "input_schema": {"type": "object"}}]


def _events(response: httpx.Response) -> list[dict[str, Any]]:
    lines = response.iter_lines()
    found = []
    for line in lines:
        if line.startswith("event: "):
            data = next(lines)
            event = json.loads(data[len("data: ") :])
            assert event["type"] == line[len("event: ") :]
            found.append(event)
    return found


def test_streams_text_and_tool_use_and_records_the_requests() -> None:
    with ScriptedAnthropicServer() as server, httpx.Client(base_url=server.base_url) as http:
        server.enqueue(
            anthropic_tools(("toolu_1", "lookup", {"q": "paris"}), text="Looking"),
            anthropic_text("Done", input_tokens=7, output_tokens=3),
        )
        body = {
            "model": "m",
            "stream": True,
            "tools": TOOLS,
            "messages": [{"role": "user", "content": "hi"}],
        }
        with http.stream("POST", "/v1/messages?beta=true", json=body) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            events = _events(response)
        kinds = [e["type"] for e in events]
        assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
        text = "".join(
            e["delta"]["text"] for e in events if e.get("delta", {}).get("type") == "text_delta"
        )
        assert text == "Looking"
        partial = [
            e["delta"]["partial_json"]
            for e in events
            if e.get("delta", {}).get("type") == "input_json_delta"
        ]
        assert len(partial) == 2 and json.loads("".join(partial)) == {"q": "paris"}
        starts = [e["content_block"] for e in events if e["type"] == "content_block_start"]
        assert starts[1] == {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}
        assert events[-2]["delta"]["stop_reason"] == "tool_use"

        whole = http.post("/v1/messages", json={"model": "m", "messages": []}).json()
        assert whole["content"] == [{"type": "text", "text": "Done"}]
        assert whole["stop_reason"] == "end_turn" and whole["usage"]["input_tokens"] == 7
        assert [r.texts() for r in server.requests] == [["hi"], []]

        empty = http.post("/v1/messages", json={"model": "m", "messages": []})
        assert empty.status_code == 500 and "request 3" in empty.json()["error"]["message"]


def test_side_requests_and_token_counting_do_not_consume_the_script() -> None:
    with (
        ScriptedAnthropicServer(side=no_tools) as server,
        httpx.Client(base_url=server.base_url) as http,
    ):
        server.enqueue(anthropic_text("main"))
        side = http.post("/v1/messages", json={"model": "haiku", "messages": []}).json()
        assert side["content"][0]["text"] == "Scripted side reply"
        count = http.post("/v1/messages/count_tokens", json={"messages": []}).json()
        assert count["input_tokens"] >= 1
        main = http.post("/v1/messages", json={"model": "m", "tools": TOOLS, "messages": []}).json()
        assert main["content"][0]["text"] == "main"
        assert len(server.requests) == 1 and len(server.all_requests) == 2
        assert http.get("/v1/models").status_code == 404


def test_errors_and_hanging_replies() -> None:
    with (
        ScriptedAnthropicServer() as server,
        httpx.Client(base_url=server.base_url, timeout=10) as http,
    ):
        server.enqueue(anthropic_text("overloaded", status=529), anthropic_text("late", hang=True))
        error = http.post("/v1/messages", json={"messages": []})
        assert error.status_code == 529 and error.json()["error"]["type"] == "overloaded_error"
        result: list[str] = []

        def call() -> None:
            result.append(
                http.post("/v1/messages", json={"messages": []}).json()["content"][0]["text"]
            )

        thread = threading.Thread(target=call)
        thread.start()
        server.wait_for_requests(2)
        thread.join(0.3)
        assert result == []
        server.release()
        thread.join(5)
        assert result == ["late"]
        assert http.post("/v1/messages", content=b"[1]").status_code == 400


class _SlowHandlers(ScriptedAnthropicServer):
    """A server whose request handlers are slow to start their responses, as a busy process's
    threads are."""

    def _respond(self, *args: Any) -> None:
        time.sleep(0.3)
        super()._respond(*args)


def test_a_release_right_after_the_requests_arrive_releases_every_one_of_them() -> None:
    """`release()` as soon as `wait_for_requests` returns lets every hanging response go, even
    one whose handler has not started its response yet (it once hung until `stop()`)."""
    with (
        _SlowHandlers() as server,
        httpx.Client(base_url=server.base_url, timeout=10) as http,
    ):
        server.enqueue(*[anthropic_text("late", hang=True)] * 2)
        result: list[str] = []

        def call() -> None:
            reply = http.post("/v1/messages", json={"messages": []})
            result.append(reply.json()["content"][0]["text"])

        threads = [threading.Thread(target=call) for _ in range(2)]
        for thread in threads:
            thread.start()
        server.wait_for_requests(2)
        server.release()
        for thread in threads:
            thread.join(5)
        assert result == ["late", "late"]


def test_a_client_that_leaves_a_hanging_response_is_counted_as_dropped() -> None:
    with ScriptedAnthropicServer() as server:
        server.enqueue(anthropic_text("never", hang=True))
        with (
            httpx.Client(base_url=server.base_url, timeout=0.5) as http,
            contextlib.suppress(httpx.ReadTimeout),
        ):
            http.post("/v1/messages", json={"messages": []})
        server.wait_for_dropped(1, timeout=5)
        assert server.dropped == 1
