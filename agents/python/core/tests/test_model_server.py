"""The scripted model server speaks the OpenAI wire formats over real HTTP."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from dex_agents.testing.model_server import (
    RecordedRequest,
    ScriptedModelServer,
    ScriptedReply,
    ScriptedToolCall,
    ScriptedUsage,
    reply_text,
    reply_tools,
)


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as started:
        yield started


@pytest.fixture
def client(server: ScriptedModelServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url, timeout=10) as http:
        yield http


def _sse_data(response: httpx.Response) -> list[str]:
    return [line[len("data: ") :] for line in response.iter_lines() if line.startswith("data: ")]


def test_helpers_build_replies() -> None:
    reply = reply_tools(("call_1", "lookup", {"q": "x"}), ("call_2", "bad", "{oops"), text="hi")
    assert reply.text == "hi"
    assert reply.tool_calls == (
        ScriptedToolCall(id="call_1", name="lookup", arguments='{"q": "x"}'),
        ScriptedToolCall(id="call_2", name="bad", arguments="{oops"),
    )
    assert reply_text("hello", model="m").model == "m"
    assert ScriptedReply().usage == ScriptedUsage()


def test_chat_completion_non_streaming(server: ScriptedModelServer, client: httpx.Client) -> None:
    assert server.base_url.startswith("http://127.0.0.1:")
    assert server.base_url.endswith("/v1")
    server.enqueue(
        reply_text("Hello there", usage=ScriptedUsage(12, 7, cached_input_tokens=3)),
        reply_tools(("call_1", "get_weather", {"city": "Paris"})),
    )
    assert server.pending == 2
    request = {"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}]}
    first = client.post("/chat/completions", json=request)
    assert first.status_code == 200
    body = first.json()
    assert body["object"] == "chat.completion"
    choice = body["choices"][0]
    assert choice["message"] == {"role": "assistant", "content": "Hello there", "refusal": None}
    assert choice["finish_reason"] == "stop"
    assert body["usage"]["prompt_tokens"] == 12
    assert body["usage"]["completion_tokens"] == 7
    assert body["usage"]["prompt_tokens_details"]["cached_tokens"] == 3
    assert body["usage"]["completion_tokens_details"]["reasoning_tokens"] == 0

    second = client.post("/chat/completions", json=request).json()
    choice = second["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    assert choice["message"]["tool_calls"] == [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
        }
    ]
    assert server.pending == 0
    assert server.requests == [
        RecordedRequest(path="/v1/chat/completions", body=request, stream=False),
        RecordedRequest(path="/v1/chat/completions", body=request, stream=False),
    ]


def test_chat_completion_streaming_with_tool_calls_and_usage(
    server: ScriptedModelServer, client: httpx.Client
) -> None:
    server.enqueue(
        reply_tools(
            ("call_a", "search", {"query": "durable agents"}),
            ("call_b", "broken", "{not json"),
            text="Let me look.",
            usage=ScriptedUsage(20, 9, reasoning_tokens=4),
        )
    )
    request = {
        "model": "gpt-x",
        "messages": [],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    with client.stream("POST", "/chat/completions", json=request) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        data = _sse_data(response)
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    choice_chunks = [c for c in chunks if c["choices"]]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in choice_chunks)
    assert text == "Let me look."
    assert sum(1 for c in choice_chunks if c["choices"][0]["delta"].get("content")) > 1

    calls: dict[int, dict[str, str]] = {}
    for c in choice_chunks:
        for tool_call in c["choices"][0]["delta"].get("tool_calls", []):
            entry = calls.setdefault(tool_call["index"], {"id": "", "name": "", "arguments": ""})
            entry["id"] += tool_call.get("id", "")
            function = tool_call.get("function", {})
            entry["name"] += function.get("name", "")
            entry["arguments"] += function.get("arguments", "")
    assert calls == {
        0: {"id": "call_a", "name": "search", "arguments": '{"query": "durable agents"}'},
        1: {"id": "call_b", "name": "broken", "arguments": "{not json"},
    }
    assert choice_chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    usage_chunk = chunks[-1]
    assert usage_chunk["choices"] == []
    assert usage_chunk["usage"]["prompt_tokens"] == 20
    assert usage_chunk["usage"]["completion_tokens"] == 9
    assert usage_chunk["usage"]["completion_tokens_details"]["reasoning_tokens"] == 4
    assert server.requests[0].stream is True


def test_chat_completion_streaming_without_usage(
    server: ScriptedModelServer, client: httpx.Client
) -> None:
    server.enqueue(reply_text("ok"))
    request = {"model": "m", "messages": [], "stream": True}
    with client.stream("POST", "/chat/completions", json=request) as response:
        data = _sse_data(response)
    chunks = [json.loads(d) for d in data[:-1]]
    assert all(c["choices"] and "usage" not in c for c in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_responses_streaming(server: ScriptedModelServer, client: httpx.Client) -> None:
    server.enqueue(
        reply_tools(
            ("call_7", "lookup", {"id": 7}),
            text="Checking.",
            reasoning="Need to look it up.",
            usage=ScriptedUsage(30, 11, cached_input_tokens=8, reasoning_tokens=6),
        )
    )
    with client.stream(
        "POST", "/responses", json={"model": "m", "input": "hi", "stream": True}
    ) as response:
        assert response.status_code == 200
        events = [json.loads(d) for d in _sse_data(response)]
    types = [e["type"] for e in events]
    assert types[:2] == ["response.created", "response.in_progress"]
    assert types[-1] == "response.completed"
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    for expected in (
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.reasoning_summary_text.delta",
    ):
        assert expected in types
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert text == "Checking."
    arguments = "".join(
        e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta"
    )
    assert arguments == '{"id": 7}'

    final = events[-1]["response"]
    assert final["status"] == "completed"
    reasoning, message, call = final["output"]
    assert reasoning["type"] == "reasoning"
    assert reasoning["summary"] == [{"type": "summary_text", "text": "Need to look it up."}]
    assert message["type"] == "message"
    assert message["role"] == "assistant"
    assert message["id"].startswith("msg_")
    assert message["content"][0]["type"] == "output_text"
    assert message["content"][0]["text"] == "Checking."
    assert message["content"][0]["annotations"] == []
    assert call["type"] == "function_call"
    assert call["id"].startswith("fc_")
    assert call["call_id"] == "call_7"
    assert call["name"] == "lookup"
    assert call["arguments"] == '{"id": 7}'
    assert call["status"] == "completed"
    assert final["usage"] == {
        "input_tokens": 30,
        "input_tokens_details": {"cached_tokens": 8, "cache_write_tokens": 0},
        "output_tokens": 11,
        "output_tokens_details": {"reasoning_tokens": 6},
        "total_tokens": 41,
    }
    assert server.requests[0].path == "/v1/responses"


def test_responses_non_streaming(server: ScriptedModelServer, client: httpx.Client) -> None:
    server.enqueue(reply_text("Done."))
    body = client.post("/responses", json={"model": "m", "input": "hi"}).json()
    assert body["object"] == "response"
    assert body["status"] == "completed"
    [message] = body["output"]
    assert message["content"][0]["text"] == "Done."
    assert body["usage"]["input_tokens"] == 10
    assert body["usage"]["output_tokens"] == 5


def test_empty_queue_is_a_500_and_is_recorded(
    server: ScriptedModelServer, client: httpx.Client
) -> None:
    server.enqueue(reply_text("only one"))
    assert client.post("/chat/completions", json={"messages": []}).status_code == 200
    response = client.post("/chat/completions", json={"messages": []})
    assert response.status_code == 500
    error = response.json()["error"]
    assert "scripted model server: no reply scripted for request #2" in error["message"]
    assert len(server.requests) == 2


def test_discard_pending_drops_unused_replies_only(
    server: ScriptedModelServer, client: httpx.Client
) -> None:
    server.enqueue(reply_text("used"), reply_text("left over"), reply_text("also left"))
    assert client.post("/chat/completions", json={"messages": []}).status_code == 200

    assert server.discard_pending() == 2
    assert server.pending == 0
    assert client.post("/chat/completions", json={"messages": []}).status_code == 500
    assert len(server.requests) == 2  # what was received stays recorded


def test_scripted_error_status_and_unknown_route(
    server: ScriptedModelServer, client: httpx.Client
) -> None:
    server.enqueue(ScriptedReply(status=429, text="slow down"))
    response = client.post("/responses", json={"input": "x"})
    assert response.status_code == 429
    assert response.json()["error"]["message"] == "slow down"
    missing = client.post("/embeddings", json={})
    assert missing.status_code == 404
    assert "error" in missing.json()
    assert client.get("/models").status_code == 404
    assert len(server.requests) == 1


def test_wait_for_requests_times_out_clearly(server: ScriptedModelServer) -> None:
    with pytest.raises(TimeoutError, match="expected 1 request"):
        server.wait_for_requests(1, timeout=0.1)
    with pytest.raises(TimeoutError, match="expected 1 dropped"):
        server.wait_for_dropped(1, timeout=0.1)


def _in_thread(fn: Any) -> tuple[threading.Thread, dict[str, Any]]:
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["value"] = fn()
        except BaseException as exc:
            result["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, result


def test_hang_until_release(server: ScriptedModelServer, client: httpx.Client) -> None:
    server.enqueue(reply_text("finally", hang=True))
    thread, result = _in_thread(
        lambda: client.post("/chat/completions", json={"messages": []}).json()
    )
    server.wait_for_requests(1)
    time.sleep(0.3)
    assert thread.is_alive()
    server.release()
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert result["value"]["choices"][0]["message"]["content"] == "finally"
    assert server.dropped == 0


def test_streamed_hang_sends_opening_events_then_release(
    server: ScriptedModelServer, client: httpx.Client
) -> None:
    server.enqueue(reply_text("streamed", hang=True))
    request = {"model": "m", "input": "hi", "stream": True}
    with client.stream("POST", "/responses", json=request) as response:
        lines = response.iter_lines()
        opening: list[str] = []
        for line in lines:
            if line.startswith("data: "):
                opening.append(json.loads(line[6:])["type"])
            if len(opening) == 2:
                break
        assert opening == ["response.created", "response.in_progress"]
        server.release()
        rest = [json.loads(line[6:])["type"] for line in lines if line.startswith("data: ")]
    assert rest[-1] == "response.completed"
    assert "response.output_text.delta" in rest
    assert server.dropped == 0


def test_dropped_client_while_hanging(server: ScriptedModelServer) -> None:
    server.enqueue(reply_text("never seen", hang=True))
    http = httpx.Client(base_url=server.base_url, timeout=0.5)
    with pytest.raises(httpx.ReadTimeout):
        http.post("/chat/completions", json={"messages": []})
    http.close()
    server.wait_for_dropped(1, timeout=5)
    assert server.dropped == 1


def test_a_request_cut_off_by_a_dying_client_is_neither_recorded_nor_answered(
    server: ScriptedModelServer, client: httpx.Client
) -> None:
    server.enqueue(reply_text("for the next request"))
    url = urlsplit(server.base_url)
    head = (
        f"POST {url.path}/chat/completions HTTP/1.1\r\nHost: {url.netloc}\r\n"
        "Content-Type: application/json\r\nContent-Length: 200\r\n\r\n"
    )
    for body in (b"", b'{"messages": ['):  # killed after the headers, or mid-body
        with socket.create_connection((url.hostname, url.port)) as sock:
            sock.sendall(head.encode() + body)
            sock.shutdown(socket.SHUT_WR)
            assert sock.recv(1024) == b""  # the server closed without an answer

    answer = client.post("/chat/completions", json={"messages": [{"role": "user"}]})

    assert answer.json()["choices"][0]["message"]["content"] == "for the next request"
    assert [request.body for request in server.requests] == [{"messages": [{"role": "user"}]}]


def test_dropped_client_mid_stream(server: ScriptedModelServer, client: httpx.Client) -> None:
    server.enqueue(reply_text("never finished", hang=True))
    request = {"model": "m", "input": "hi", "stream": True}
    with client.stream("POST", "/responses", json=request) as response:
        seen: list[str] = []
        for line in response.iter_lines():
            if line.startswith("data: "):
                seen.append(json.loads(line[6:])["type"])
            if seen == ["response.created", "response.in_progress"]:
                break
    server.wait_for_dropped(1, timeout=5)
    assert server.dropped == 1
    server.enqueue(reply_text("after"))
    assert client.post("/responses", json={"input": "x"}).json()["status"] == "completed"


def test_release_frees_only_requests_already_received(
    server: ScriptedModelServer, client: httpx.Client
) -> None:
    server.release()
    server.enqueue(reply_text("held", hang=True))
    thread, result = _in_thread(
        lambda: client.post("/chat/completions", json={"messages": []}).json()
    )
    server.wait_for_requests(1)
    time.sleep(0.2)
    assert thread.is_alive()
    server.release()
    thread.join(timeout=5)
    assert result["value"]["choices"][0]["message"]["content"] == "held"


def test_stop_frees_hung_responses() -> None:
    server = ScriptedModelServer().start()
    server.enqueue(reply_text("bye", hang=True))
    with httpx.Client(base_url=server.base_url, timeout=10) as http:
        thread, result = _in_thread(
            lambda: http.post("/chat/completions", json={"messages": []}).status_code
        )
        server.wait_for_requests(1)
        started = time.monotonic()
        server.stop()
        thread.join(timeout=5)
        assert time.monotonic() - started < 5
        assert result["value"] == 200


def test_the_server_runs_on_its_own_from_a_script_and_loops_over_it(tmp_path):
    import socket
    import subprocess
    import sys

    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                {
                    "tool_calls": [
                        {"id": "c1", "name": "get_weather", "arguments": {"city": "Oslo"}}
                    ]
                },
                {"text": "Cold in Oslo."},
            ]
        )
    )
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "dex_agents", "model-server"]
    log = tmp_path / "requests.jsonl"
    process = subprocess.Popen(
        [*command, "--script", str(script), "--port", str(port), "--log", str(log)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().startswith(f"scripted model at http://127.0.0.1:{port}/v1")
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        body = {"model": "m", "messages": [{"role": "user", "content": "Weather?"}]}
        answers = [httpx.post(url, json=body).json()["choices"][0]["message"] for _ in range(3)]
    finally:
        process.terminate()
        process.wait(10)
    assert answers[0]["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": '{"city": "Oslo"}',
    }
    assert [a["content"] for a in answers[1:]] == ["Cold in Oslo.", None]  # then from the top
    # --log: each request as the server received it, one JSON line each.
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert logged == [{"path": "/v1/chat/completions", "body": body}] * 3

    script.write_text('[{"txt": "typo"}]')
    bad = subprocess.run([*command, "--script", str(script)], capture_output=True, text=True)
    assert bad.returncode == 1
    assert bad.stderr.startswith(f"error: {script}, reply 1: unknown field(s) txt;")
