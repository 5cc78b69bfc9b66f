"""A scripted Anthropic Messages API server for tests.

The Claude Code CLI (bundled in the ``claude-agent-sdk`` wheel) and the ``anthropic`` SDK call
it through ``ANTHROPIC_BASE_URL`` (:attr:`ScriptedAnthropicServer.base_url`) without a model
key. Script replies with :meth:`ScriptedAnthropicServer.enqueue` (:func:`anthropic_text`,
:func:`anthropic_tools`) and look at what the client sent with
:attr:`ScriptedAnthropicServer.requests`.

Endpoints: ``POST /v1/messages`` (streaming as server-sent events ``message_start``,
``content_block_start``, ``content_block_delta`` with ``text_delta`` and ``input_json_delta``,
``content_block_stop``, ``message_delta`` with the usage, ``message_stop``; or one JSON message
when the request does not ask for a stream) and ``POST /v1/messages/count_tokens``. Each
messages request consumes one scripted reply, first in first out; a request that finds the
queue empty gets a 500 whose message says which request it was. A request that ``side``
(a predicate on the request body) accepts is answered with ``side_reply`` instead and does not
consume the script: the CLI's own small side requests (a title, a quota check) then do not
shift the script. Token counting is answered from the request size and not recorded as a
messages request. Anything else gets a 404.

A reply with ``hang=True`` holds its response (after ``message_start``) until
:meth:`ScriptedAnthropicServer.release` or :meth:`ScriptedAnthropicServer.stop`; a client that
goes away meanwhile is counted in :attr:`ScriptedAnthropicServer.dropped`.

Standard library only: an :class:`http.server.ThreadingHTTPServer` in a daemon thread.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
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
    "AnthropicReply",
    "AnthropicRequest",
    "AnthropicToolUse",
    "ScriptedAnthropicServer",
    "anthropic_text",
    "anthropic_tools",
    "no_tools",
]

MESSAGES_PATH = "/v1/messages"
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"
_TEXT_PIECES = 3
_JSON_PIECES = 2


@dataclass(frozen=True)
class AnthropicToolUse:
    """One ``tool_use`` block; ``input`` is streamed as its JSON text in pieces."""

    id: str
    name: str
    input: dict[str, Any]


@dataclass(frozen=True)
class AnthropicReply:
    """What the server answers to one messages request.

    A ``status`` other than 200 answers with an Anthropic-style error body whose message is
    ``text`` (or a default one)."""

    text: str | None = None
    tool_uses: tuple[AnthropicToolUse, ...] = ()
    input_tokens: int = 10
    output_tokens: int = 5
    hang: bool = False
    status: int = 200
    model: str = "claude-scripted"


def anthropic_text(text: str, **kw: Any) -> AnthropicReply:
    """A reply with assistant text; ``kw`` are the other :class:`AnthropicReply` fields."""
    return AnthropicReply(text=text, **kw)


def anthropic_tools(
    *uses: tuple[str, str, dict[str, Any]], text: str | None = None, **kw: Any
) -> AnthropicReply:
    """A reply with ``tool_use`` blocks given as ``(id, name, input)``."""
    blocks = tuple(AnthropicToolUse(id=i, name=n, input=dict(a)) for i, n, a in uses)
    return AnthropicReply(text=text, tool_uses=blocks, **kw)


@dataclass(frozen=True)
class AnthropicRequest:
    """One messages request the server received (side requests included, ``side`` set)."""

    body: dict[str, Any]
    side: bool = False
    received_at: float = field(default=0.0, compare=False)

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages = self.body.get("messages")
        return messages if isinstance(messages, list) else []

    def texts(self) -> list[str]:
        """Every text and tool result content in the request's messages, in order."""
        found: list[str] = []
        for message in self.messages:
            found.extend(_texts_of(message.get("content")))
        return found


def _texts_of(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    found: list[str] = []
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                found.append(str(block.get("text", "")))
            elif block.get("type") == "tool_result":
                found.extend(_texts_of(block.get("content")))
    return found


class _Exchange(Exchange):
    def _head(self, status: int, headers: dict[str, str]) -> None:
        super()._head(status, {**headers, "request-id": f"req_scripted_{time.monotonic_ns()}"})

    def send_json(self, status: int, body: dict[str, Any]) -> None:
        payload = json.dumps(body).encode()
        self._head(
            status, {"Content-Type": "application/json", "Content-Length": str(len(payload))}
        )
        self._write(payload)

    def send_event(self, data: dict[str, Any]) -> None:
        self._chunk(f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode())


def _error_body(status: int, message: str) -> dict[str, Any]:
    kinds = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error"}
    kinds.update({429: "rate_limit_error", 529: "overloaded_error"})
    kind = kinds.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


class _Message:
    """One scripted reply rendered as an Anthropic message, whole or as stream events."""

    def __init__(self, reply: AnthropicReply, number: int) -> None:
        self.reply = reply
        self.id = f"msg_scripted_{number}"

    def _usage(self, input_tokens: int) -> dict[str, Any]:
        return {
            "input_tokens": input_tokens,
            "output_tokens": self.reply.output_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }

    def _stop_reason(self) -> str:
        return "tool_use" if self.reply.tool_uses else "end_turn"

    def content(self) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if self.reply.text is not None:
            blocks.append({"type": "text", "text": self.reply.text})
        for use in self.reply.tool_uses:
            blocks.append({"type": "tool_use", "id": use.id, "name": use.name, "input": use.input})
        return blocks

    def whole(self) -> dict[str, Any]:
        return {
            **self._envelope(self.content()),
            "stop_reason": self._stop_reason(),
            "usage": self._usage(self.reply.input_tokens),
        }

    def _envelope(self, content: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.reply.model,
            "content": content,
            "stop_reason": None,
            "stop_sequence": None,
        }

    def opening(self) -> dict[str, Any]:
        message = {**self._envelope([]), "usage": self._usage(self.reply.input_tokens)}
        message["usage"]["output_tokens"] = 1
        return {"type": "message_start", "message": message}

    def body_events(self) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        index = 0
        if self.reply.text is not None:
            events.append(_block_start(index, {"type": "text", "text": ""}))
            for piece in pieces(self.reply.text, _TEXT_PIECES):
                events.append(_delta(index, {"type": "text_delta", "text": piece}))
            events.append({"type": "content_block_stop", "index": index})
            index += 1
        for use in self.reply.tool_uses:
            start = {"type": "tool_use", "id": use.id, "name": use.name, "input": {}}
            events.append(_block_start(index, start))
            for piece in pieces(json.dumps(use.input), _JSON_PIECES):
                events.append(_delta(index, {"type": "input_json_delta", "partial_json": piece}))
            events.append({"type": "content_block_stop", "index": index})
            index += 1
        events.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": self._stop_reason(), "stop_sequence": None},
                "usage": {"output_tokens": self.reply.output_tokens},
            }
        )
        events.append({"type": "message_stop"})
        return events


def _block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


Side = Callable[[dict[str, Any]], bool]


def no_tools(body: dict[str, Any]) -> bool:
    """A side request: one that offers the model no tools (the CLI's own small calls)."""
    return not body.get("tools")


class ScriptedAnthropicServer(LoopbackServer):
    """A scripted Anthropic Messages API on ``127.0.0.1`` and an ephemeral port (or ``port``).

    ``side`` picks the requests answered with ``side_reply`` without consuming the script
    (none by default; :func:`no_tools` picks the requests that offer no tools)."""

    _thread_name = "scripted-anthropic-server"

    def __init__(
        self,
        *,
        port: int = 0,
        side: Side | None = None,
        side_reply: AnthropicReply | None = None,
    ) -> None:
        super().__init__(port)
        self._side = side
        self._side_reply = side_reply or AnthropicReply(text="Scripted side reply")
        self._replies: deque[AnthropicReply] = deque()
        self._requests: list[AnthropicRequest] = []

    # -- scripting and inspection ----------------------------------------------------------

    def enqueue(self, *replies: AnthropicReply) -> None:
        with self._lock:
            self._replies.extend(replies)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._replies)

    @property
    def requests(self) -> list[AnthropicRequest]:
        """The scripted (non-side) messages requests received so far."""
        with self._lock:
            return [r for r in self._requests if not r.side]

    @property
    def all_requests(self) -> list[AnthropicRequest]:
        """Every messages request received so far, side requests included."""
        with self._lock:
            return list(self._requests)

    def wait_for_requests(self, count: int, timeout: float = 30.0) -> list[AnthropicRequest]:
        def enough() -> bool:
            return sum(not r.side for r in self._requests) >= count

        with self._changed:
            if not self._changed.wait_for(enough, timeout):
                raise TimeoutError(
                    f"scripted Anthropic server: expected {count} request(s) within {timeout}s, "
                    f"got {sum(not r.side for r in self._requests)}"
                )
            return [r for r in self._requests if not r.side]

    @property
    def dropped(self) -> int:
        """How many clients went away while their response hung."""
        with self._lock:
            return self._dropped

    def wait_for_dropped(self, count: int, timeout: float = 30.0) -> None:
        with self._changed:
            if not self._changed.wait_for(lambda: self._dropped >= count, timeout):
                raise TimeoutError(
                    f"scripted Anthropic server: expected {count} dropped response(s) within "
                    f"{timeout}s, got {self._dropped}"
                )

    # -- request handling ------------------------------------------------------------------

    def _send_error(self, handler: Handler, status: int, message: str) -> None:
        try:
            _Exchange(handler).send_json(status, _error_body(status, message))
        except ClientGone:
            handler.close_connection = True

    def _handle_unknown(self, handler: Handler) -> None:
        self._send_error(handler, 404, f"scripted Anthropic server: no route for {handler.path}")

    def _handle_post(self, handler: Handler) -> None:
        raw = read_body(handler)
        if raw is None:
            return
        path = handler.path.split("?", 1)[0]
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        if path not in (MESSAGES_PATH, COUNT_TOKENS_PATH):
            self._send_error(handler, 404, f"scripted Anthropic server: no route for {path}")
        elif not isinstance(body, dict):
            self._send_error(handler, 400, "scripted Anthropic server: body is not a JSON object")
        elif path == COUNT_TOKENS_PATH:
            self._count_tokens(handler, raw)
        else:
            self._messages(handler, body)

    def _count_tokens(self, handler: Handler, raw: bytes) -> None:
        try:
            _Exchange(handler).send_json(200, {"input_tokens": max(1, len(raw) // 4)})
        except ClientGone:
            handler.close_connection = True

    def _take(
        self, body: dict[str, Any]
    ) -> tuple[AnthropicReply | None, int, threading.Event | None]:
        """The request's reply, its number, and its hang event: registered with the request,
        so a `release()` right after `wait_for_requests` sees this request also releases it."""
        side = self._side is not None and self._side(body)
        with self._changed:
            self._requests.append(
                AnthropicRequest(body=body, side=side, received_at=time.monotonic())
            )
            self._changed.notify_all()
            number = len(self._requests)
            if side:
                return self._side_reply, number, None
            reply = self._replies.popleft() if self._replies else None
            hang = None
            if reply is not None and reply.hang and not self._stopping.is_set():
                hang = threading.Event()
                self._hanging.append(hang)
            return reply, number, hang

    def _messages(self, handler: Handler, body: dict[str, Any]) -> None:
        reply, number, hang = self._take(body)
        if reply is None:
            message = f"scripted Anthropic server: no scripted reply left for request {number}"
            self._send_error(handler, 500, message)
            return
        if reply.status != 200:
            self._send_error(handler, reply.status, reply.text or "scripted error")
            return
        try:
            self._respond(handler, reply, number, bool(body.get("stream")), hang)
        except ClientGone:
            handler.close_connection = True

    def _respond(
        self,
        handler: Handler,
        reply: AnthropicReply,
        number: int,
        stream: bool,
        hang: threading.Event | None,
    ) -> None:
        message = _Message(reply, number)
        exchange = _Exchange(handler)
        if not stream:
            self._hold(handler, hang)
            exchange.send_json(200, message.whole())
            return
        exchange.start_stream()
        exchange.send_event(message.opening())
        self._hold(handler, hang)
        for event in message.body_events():
            exchange.send_event(event)
        exchange.end_stream()

    def _hold(self, handler: Handler, event: threading.Event | None) -> None:
        if event is None:
            return
        while not event.wait(POLL_SECONDS):
            if client_gone(handler.connection):
                with self._changed:
                    self._dropped += 1
                    self._changed.notify_all()
                raise ClientGone
