"""A scripted OpenAI-compatible model server for tests.

Test processes start one on loopback so that the real HTTP clients of agent frameworks (the
``openai`` Python SDK used by Pydantic AI and the OpenAI Agents SDK, and LiteLLM) make real calls
without a model key. Point the client at :attr:`ScriptedModelServer.base_url`, script the replies
with :meth:`ScriptedModelServer.enqueue`, and look at what the framework sent with
:attr:`ScriptedModelServer.requests`.

Endpoints: ``POST /v1/chat/completions`` and ``POST /v1/responses``, each non-streaming and
streaming (``"stream": true``, server-sent events). Anything else gets a 404. Each request to
an endpoint consumes one scripted reply, first in first out; a request that finds the queue
empty gets a 500 whose message says which request it was. Note that the ``openai`` SDK retries
429 and 5xx replies (twice by default), and every retry is a request of its own; the adapters'
runners and Stepwise turn those retries off for their model calls, so each ``RunModel``
attempt is one request.

A streamed chat completion with ``cut_after_text=True`` closes its connection right after
its text, so the client sees the response break off (a failed model call attempt).

A reply with ``hang=True`` holds its response until :meth:`ScriptedModelServer.release` (or
:meth:`ScriptedModelServer.stop`). :meth:`release` frees the responses of the requests received
so far; a hanging reply consumed by a later request hangs until the next :meth:`release`. A
streamed hanging reply first sends its opening events (the role chunk, or ``response.created``
and ``response.in_progress``), then hangs. A client that goes away while its response hangs,
waits out ``delay_seconds`` or streams is counted in :attr:`ScriptedModelServer.dropped`.

Standard library only: an :class:`http.server.ThreadingHTTPServer` in a daemon thread.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._loopback import (
    POLL_SECONDS,
    ClientGone,
    Exchange,
    Handler,
    LoopbackServer,
    client_gone,
    pieces,
    read_body,
)

__all__ = [
    "RecordedRequest",
    "ScriptedModelServer",
    "ScriptedReply",
    "ScriptedToolCall",
    "ScriptedUsage",
    "load_script",
    "reply_text",
    "reply_tools",
    "serve_script",
]

CHAT_COMPLETIONS_PATH = "/v1/chat/completions"
RESPONSES_PATH = "/v1/responses"
_TEXT_DELTAS = 3
_ARGUMENT_DELTAS = 2


@dataclass(frozen=True)
class ScriptedToolCall:
    """One tool call of a scripted reply; ``arguments`` is sent verbatim (may be malformed)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ScriptedUsage:
    input_tokens: int = 10
    output_tokens: int = 5
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0


@dataclass(frozen=True)
class ScriptedReply:
    """What the server answers to one request.

    ``reasoning`` becomes a reasoning item with a summary on the Responses API and is ignored on
    chat completions. A ``status`` other than 200 answers with an OpenAI-style error body whose
    message is ``text`` (or a default one), and a ``Retry-After`` header of ``retry_after``
    seconds when that is set.
    """

    text: str | None = None
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    reasoning: str | None = None
    usage: ScriptedUsage = field(default_factory=ScriptedUsage)
    hang: bool = False
    delay_seconds: float = 0.0
    status: int = 200
    retry_after: float | None = None
    model: str = "scripted-model"
    # Streamed chat completions only: close the connection right after the text, without the
    # rest of the response (a model call cut off midway, after it streamed some text).
    cut_after_text: bool = False


def reply_text(text: str, **kw: Any) -> ScriptedReply:
    """A reply with assistant text; ``kw`` are the other :class:`ScriptedReply` fields."""
    return ScriptedReply(text=text, **kw)


def reply_tools(
    *calls: tuple[str, str, dict[str, Any] | str], text: str | None = None, **kw: Any
) -> ScriptedReply:
    """A reply with tool calls given as ``(id, name, arguments)``.

    Arguments given as a dict are sent as their JSON text; a str is sent verbatim.
    """
    tool_calls = tuple(
        ScriptedToolCall(
            id=call_id,
            name=name,
            arguments=arguments if isinstance(arguments, str) else json.dumps(arguments),
        )
        for call_id, name, arguments in calls
    )
    return ScriptedReply(text=text, tool_calls=tool_calls, **kw)


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    body: dict[str, Any]
    stream: bool
    # time.monotonic() when the request arrived (not compared: tests compare what was sent).
    received_at: float = field(default=0.0, compare=False)
    # The body's bytes as sent, for a test that needs the same bytes, not the same JSON.
    raw: bytes = field(default=b"", compare=False, repr=False)


def _error_body(status: int, message: str, code: str | None = None) -> dict[str, Any]:
    if status == 401:
        kind = "authentication_error"
    elif status == 404:
        kind = "not_found_error"
    elif status == 429:
        kind = "rate_limit_error"
    elif status >= 500:
        kind = "server_error"
    else:
        kind = "invalid_request_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class _Exchange(Exchange):
    def send_json(
        self, status: int, body: dict[str, Any], headers: Mapping[str, str] | None = None
    ) -> None:
        payload = json.dumps(body).encode()
        content = {"Content-Type": "application/json", "Content-Length": str(len(payload))}
        self._head(status, {**(headers or {}), **content})
        self._write(payload)

    def send_event(self, data: dict[str, Any] | str, event: str | None = None) -> None:
        text = data if isinstance(data, str) else json.dumps(data)
        frame = (f"event: {event}\n" if event else "") + f"data: {text}\n\n"
        self._chunk(frame.encode())


class ScriptedModelServer(LoopbackServer):
    """A scripted OpenAI-compatible model server on ``127.0.0.1`` and an ephemeral port (or
    ``port``). With ``loop`` set, a request that finds the queue empty starts ``loop`` over."""

    _thread_name = "scripted-model-server"
    _url_path = "/v1"

    def __init__(
        self,
        *,
        port: int = 0,
        loop: Sequence[ScriptedReply] = (),
        request_log: Path | None = None,
    ) -> None:
        """`request_log`: a file each request is appended to as it arrives (a JSON line of its
        path and body), for a test in another process to read what the server received."""
        super().__init__(port)
        self._loop = tuple(loop)
        self._replies: deque[ScriptedReply] = deque()
        self._requests: list[RecordedRequest] = []
        self._item_counter = 0
        self._request_log = request_log

    # -- scripting and inspection ----------------------------------------------------------

    def enqueue(self, *replies: ScriptedReply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def discard_pending(self) -> int:
        """Drops the replies no request used yet; returns how many there were."""
        with self._lock:
            count = len(self._replies)
            self._replies.clear()
            return count

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._replies)

    @property
    def dropped(self) -> int:
        with self._lock:
            return self._dropped

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> list[RecordedRequest]:
        with self._changed:
            if not self._changed.wait_for(lambda: len(self._requests) >= count, timeout):
                seen = [r.path for r in self._requests]
                raise TimeoutError(
                    f"scripted model server: expected {count} request(s) within {timeout}s, "
                    f"got {len(seen)}: {seen}"
                )
            return list(self._requests)

    def wait_for_dropped(self, count: int, timeout: float = 10.0) -> None:
        with self._changed:
            if not self._changed.wait_for(lambda: self._dropped >= count, timeout):
                raise TimeoutError(
                    f"scripted model server: expected {count} dropped response(s) within "
                    f"{timeout}s, got {self._dropped} (requests received: {len(self._requests)})"
                )

    # -- request handling ------------------------------------------------------------------

    def _handle_unknown(self, handler: Handler) -> None:
        if read_body(handler) is None:
            return
        self._send_error(handler, 404, f"scripted model server: no route for {handler.path}")

    def _send_error(self, handler: Handler, status: int, message: str) -> None:
        try:
            _Exchange(handler).send_json(status, _error_body(status, message))
        except ClientGone:
            handler.close_connection = True

    def _handle_post(self, handler: Handler) -> None:
        raw = read_body(handler)
        if raw is None:
            return
        path = handler.path.split("?", 1)[0]
        if path not in (CHAT_COMPLETIONS_PATH, RESPONSES_PATH):
            self._send_error(handler, 404, f"scripted model server: no route for {path}")
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self._send_error(
                handler, 400, "scripted model server: request body is not a JSON object"
            )
            return
        stream = bool(body.get("stream"))
        hang_event: threading.Event | None = None
        with self._changed:
            self._requests.append(
                RecordedRequest(
                    path=path, body=body, stream=stream, received_at=time.monotonic(), raw=raw
                )
            )
            if self._request_log is not None:
                with self._request_log.open("a", encoding="utf-8") as log:
                    log.write(json.dumps({"path": path, "body": body}) + "\n")
            number = len(self._requests)
            if not self._replies:
                self._replies.extend(self._loop)
            reply = self._replies.popleft() if self._replies else None
            if reply is not None and reply.hang:
                hang_event = threading.Event()
                self._hanging.append(hang_event)
            self._changed.notify_all()
        if reply is None:
            self._send_error(
                handler, 500, f"scripted model server: no reply scripted for request #{number}"
            )
            return
        exchange = _Exchange(handler)
        try:
            self._respond(exchange, path, body, stream, number, reply, hang_event)
        except ClientGone:
            handler.close_connection = True
            with self._changed:
                self._dropped += 1
                self._changed.notify_all()
        finally:
            if hang_event is not None:
                with self._lock:
                    if hang_event in self._hanging:
                        self._hanging.remove(hang_event)

    def _hold(
        self, handler: Handler, until: Callable[[], bool], event: threading.Event | None
    ) -> None:
        """Wait until ``until()`` or stop; raise :class:`ClientGone` if the client leaves."""
        sock = handler.connection
        while not until() and not self._stopping.is_set():
            if event is not None:
                event.wait(POLL_SECONDS)
            else:
                time.sleep(POLL_SECONDS)
            if client_gone(sock):
                raise ClientGone

    def _delay(self, handler: Handler, seconds: float) -> None:
        if seconds <= 0:
            return
        deadline = time.monotonic() + seconds
        sock = handler.connection
        while not self._stopping.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, POLL_SECONDS))
            if client_gone(sock):
                raise ClientGone

    def _hang(self, handler: Handler, event: threading.Event | None) -> None:
        if event is not None:
            self._hold(handler, event.is_set, event)

    def _respond(
        self,
        exchange: _Exchange,
        path: str,
        body: dict[str, Any],
        stream: bool,
        number: int,
        reply: ScriptedReply,
        hang_event: threading.Event | None,
    ) -> None:
        handler = exchange.handler
        self._delay(handler, reply.delay_seconds)
        if reply.status != 200:
            self._hang(handler, hang_event)
            message = reply.text or f"scripted model server: scripted error {reply.status}"
            retry = {} if reply.retry_after is None else {"Retry-After": f"{reply.retry_after:g}"}
            body = _error_body(reply.status, message, "scripted_error")
            exchange.send_json(reply.status, body, retry)
            return
        with self._lock:
            first_item = self._item_counter + 1
            self._item_counter += 1 + len(reply.tool_calls) + 1
        if path == CHAT_COMPLETIONS_PATH:
            chat = _ChatCompletion(reply, number)
            if stream:
                include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                chunks = chat.chunks(include_usage)
                exchange.start_stream()
                exchange.send_event(chunks[0])
                self._hang(handler, hang_event)
                if reply.cut_after_text:
                    for piece in pieces(reply.text or "", _TEXT_DELTAS):
                        exchange.send_event(chat._chunk({"content": piece}, None, include_usage))
                    handler.close_connection = True
                    return
                for chunk in chunks[1:]:
                    exchange.send_event(chunk)
                exchange.send_event("[DONE]")
                exchange.end_stream()
            else:
                self._hang(handler, hang_event)
                exchange.send_json(200, chat.completion())
        else:
            responses = _Response(reply, number, first_item, body)
            if stream:
                events = responses.events()
                exchange.start_stream()
                for event in events[:2]:
                    exchange.send_event(event, event["type"])
                self._hang(handler, hang_event)
                for event in events[2:]:
                    exchange.send_event(event, event["type"])
                exchange.end_stream()
            else:
                self._hang(handler, hang_event)
                exchange.send_json(200, responses.final())


# -- wire formats --------------------------------------------------------------------------


class _ChatCompletion:
    def __init__(self, reply: ScriptedReply, number: int) -> None:
        self.reply = reply
        self.id = f"chatcmpl-scripted-{number}"
        self.created = int(time.time())

    def _finish_reason(self) -> str:
        return "tool_calls" if self.reply.tool_calls else "stop"

    def _usage(self) -> dict[str, Any]:
        usage = self.reply.usage
        return {
            "prompt_tokens": usage.input_tokens,
            "completion_tokens": usage.output_tokens,
            "total_tokens": usage.input_tokens + usage.output_tokens,
            "prompt_tokens_details": {
                "cached_tokens": usage.cached_input_tokens,
                "audio_tokens": 0,
            },
            "completion_tokens_details": {
                "reasoning_tokens": usage.reasoning_tokens,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }

    def completion(self) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": self.reply.text,
            "refusal": None,
        }
        if self.reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in self.reply.tool_calls
            ]
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.reply.model,
            "system_fingerprint": None,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": self._finish_reason(),
                }
            ],
            "usage": self._usage(),
        }

    def _chunk(
        self, delta: dict[str, Any], finish_reason: str | None, include_usage: bool
    ) -> dict[str, Any]:
        chunk: dict[str, Any] = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.reply.model,
            "system_fingerprint": None,
            "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            ],
        }
        if include_usage:
            chunk["usage"] = None
        return chunk

    def chunks(self, include_usage: bool) -> list[dict[str, Any]]:
        reply = self.reply
        first_content = "" if reply.text is not None else None
        chunks = [
            self._chunk(
                {"role": "assistant", "content": first_content, "refusal": None},
                None,
                include_usage,
            )
        ]
        for piece in pieces(reply.text or "", _TEXT_DELTAS):
            chunks.append(self._chunk({"content": piece}, None, include_usage))
        for index, call in enumerate(reply.tool_calls):
            opening = {
                "index": index,
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            chunks.append(self._chunk({"tool_calls": [opening]}, None, include_usage))
            for piece in pieces(call.arguments, _ARGUMENT_DELTAS):
                delta = {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
                chunks.append(self._chunk(delta, None, include_usage))
        chunks.append(self._chunk({}, self._finish_reason(), include_usage))
        if include_usage:
            usage_chunk = self._chunk({}, None, False)
            usage_chunk["choices"] = []
            usage_chunk["usage"] = self._usage()
            chunks.append(usage_chunk)
        return chunks


class _Response:
    def __init__(
        self, reply: ScriptedReply, number: int, first_item: int, request: dict[str, Any]
    ) -> None:
        self.reply = reply
        self.request = request
        self.id = f"resp_scripted_{number}"
        self.created_at = int(time.time())
        self.reasoning_id = f"rs_{first_item}"
        self.message_id = f"msg_{first_item}"
        self.call_ids = [f"fc_{first_item + 1 + i}" for i in range(len(reply.tool_calls))]

    def _usage(self) -> dict[str, Any]:
        usage = self.reply.usage
        return {
            "input_tokens": usage.input_tokens,
            # cache_write_tokens: required by recent openai SDK types, absent from older ones.
            "input_tokens_details": {
                "cached_tokens": usage.cached_input_tokens,
                "cache_write_tokens": 0,
            },
            "output_tokens": usage.output_tokens,
            "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
            "total_tokens": usage.input_tokens + usage.output_tokens,
        }

    def _envelope(self, status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
        request = self.request
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "error": None,
            "incomplete_details": None,
            "instructions": request.get("instructions"),
            "max_output_tokens": request.get("max_output_tokens"),
            "model": self.reply.model,
            "output": output,
            "parallel_tool_calls": request.get("parallel_tool_calls", True),
            "previous_response_id": request.get("previous_response_id"),
            "reasoning": {"effort": None, "summary": None},
            "store": request.get("store", True),
            "temperature": request.get("temperature", 1.0),
            "text": {"format": {"type": "text"}},
            "tool_choice": request.get("tool_choice", "auto"),
            "tools": request.get("tools", []),
            "top_p": request.get("top_p", 1.0),
            "truncation": request.get("truncation", "disabled"),
            "usage": self._usage() if status == "completed" else None,
            "user": None,
            "metadata": request.get("metadata") or {},
        }

    def _reasoning_item(self, done: bool) -> dict[str, Any]:
        summary = [{"type": "summary_text", "text": self.reply.reasoning}] if done else []
        return {"id": self.reasoning_id, "type": "reasoning", "summary": summary}

    def _text_part(self, text: str) -> dict[str, Any]:
        return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}

    def _message_item(self, done: bool) -> dict[str, Any]:
        content = [self._text_part(self.reply.text or "")] if done else []
        return {
            "id": self.message_id,
            "type": "message",
            "status": "completed" if done else "in_progress",
            "role": "assistant",
            "content": content,
        }

    def _call_item(self, index: int, done: bool) -> dict[str, Any]:
        call = self.reply.tool_calls[index]
        return {
            "id": self.call_ids[index],
            "type": "function_call",
            "status": "completed" if done else "in_progress",
            "call_id": call.id,
            "name": call.name,
            "arguments": call.arguments if done else "",
        }

    def output(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        if self.reply.reasoning is not None:
            items.append(self._reasoning_item(True))
        if self.reply.text is not None:
            items.append(self._message_item(True))
        items.extend(self._call_item(i, True) for i in range(len(self.reply.tool_calls)))
        return items

    def final(self) -> dict[str, Any]:
        return self._envelope("completed", self.output())

    def events(self) -> list[dict[str, Any]]:
        """The streamed events, ``sequence_number`` included."""
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": self._envelope("in_progress", [])},
            {"type": "response.in_progress", "response": self._envelope("in_progress", [])},
        ]
        index = 0
        reply = self.reply
        if reply.reasoning is not None:
            item_id = self.reasoning_id
            part = {"type": "summary_text", "text": reply.reasoning}
            at = {"item_id": item_id, "output_index": index, "summary_index": 0}
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": self._reasoning_item(False),
                }
            )
            events.append(
                {
                    "type": "response.reasoning_summary_part.added",
                    **at,
                    "part": {"type": "summary_text", "text": ""},
                }
            )
            for piece in pieces(reply.reasoning, _TEXT_DELTAS):
                events.append(
                    {"type": "response.reasoning_summary_text.delta", **at, "delta": piece}
                )
            events.append(
                {"type": "response.reasoning_summary_text.done", **at, "text": reply.reasoning}
            )
            events.append({"type": "response.reasoning_summary_part.done", **at, "part": part})
            events.append(
                {
                    "type": "response.output_item.done",
                    "output_index": index,
                    "item": self._reasoning_item(True),
                }
            )
            index += 1
        if reply.text is not None:
            at = {"item_id": self.message_id, "output_index": index, "content_index": 0}
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": self._message_item(False),
                }
            )
            events.append(
                {"type": "response.content_part.added", **at, "part": self._text_part("")}
            )
            for piece in pieces(reply.text, _TEXT_DELTAS):
                events.append(
                    {"type": "response.output_text.delta", **at, "delta": piece, "logprobs": []}
                )
            events.append(
                {
                    "type": "response.output_text.done",
                    **at,
                    "text": reply.text,
                    "logprobs": [],
                }
            )
            events.append(
                {"type": "response.content_part.done", **at, "part": self._text_part(reply.text)}
            )
            events.append(
                {
                    "type": "response.output_item.done",
                    "output_index": index,
                    "item": self._message_item(True),
                }
            )
            index += 1
        for call_index, call in enumerate(reply.tool_calls):
            at = {"item_id": self.call_ids[call_index], "output_index": index}
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": self._call_item(call_index, False),
                }
            )
            for piece in pieces(call.arguments, _ARGUMENT_DELTAS):
                events.append(
                    {"type": "response.function_call_arguments.delta", **at, "delta": piece}
                )
            events.append(
                {
                    "type": "response.function_call_arguments.done",
                    **at,
                    "name": call.name,
                    "arguments": call.arguments,
                }
            )
            events.append(
                {
                    "type": "response.output_item.done",
                    "output_index": index,
                    "item": self._call_item(call_index, True),
                }
            )
            index += 1
        events.append({"type": "response.completed", "response": self.final()})
        for sequence_number, event in enumerate(events):
            event["sequence_number"] = sequence_number
        return events


# -- on its own: dex-agents model-server --script FILE ----------------------------------


def load_script(path: str) -> list[ScriptedReply]:
    """Replies from a JSON file: a list of objects with ``text``, ``tool_calls`` (each with
    ``id``, ``name`` and ``arguments``, an object or its JSON text), ``reasoning``,
    ``delay_seconds``, ``status`` and ``retry_after``, as :class:`ScriptedReply` has them."""
    with open(path, encoding="utf-8") as file:
        items = json.load(file)
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise ValueError(f"{path}: expected a JSON list of reply objects")
    return [_reply(item, f"{path}, reply {i + 1}") for i, item in enumerate(items)]


def _reply(item: dict[str, Any], where: str) -> ScriptedReply:
    known = {"text", "tool_calls", "reasoning", "delay_seconds", "status", "retry_after"}
    unknown = sorted(set(item) - known)
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {', '.join(unknown)}; known: {sorted(known)}")
    calls = tuple(
        ScriptedToolCall(
            id=str(call["id"]),
            name=str(call["name"]),
            arguments=(
                call["arguments"]
                if isinstance(call.get("arguments"), str)
                else json.dumps(call.get("arguments", {}))
            ),
        )
        for call in item.get("tool_calls", [])
    )
    return ScriptedReply(
        text=item.get("text"),
        tool_calls=calls,
        reasoning=item.get("reasoning"),
        delay_seconds=float(item.get("delay_seconds", 0.0)),
        status=int(item.get("status", 200)),
        retry_after=None if item.get("retry_after") is None else float(item["retry_after"]),
    )


def serve_script(
    replies: Sequence[ScriptedReply], *, port: int, once: bool, request_log: Path | None = None
) -> None:
    """Serves `replies` until Ctrl-C: over and over, or once (then every request gets a 500);
    each request received is appended to `request_log` when given."""
    server = ScriptedModelServer(port=port, loop=() if once else replies, request_log=request_log)
    if once:
        server.enqueue(*replies)
    server.start()
    print(f"scripted model at {server.base_url} ({len(replies)} replies); Ctrl-C stops it")
    print(f"  OPENAI_BASE_URL={server.base_url} OPENAI_API_KEY=scripted", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
