"""A scripted runner server on loopback: the runner wire protocol, one scripted answer per call.

    with ScriptedRunnerServer(flow_type="TriageAgent") as runner:
        runner.script("run_model_step", tool_calls(("c1", "refund", "{}")), final_text("Done."))
        runner.script("execute_deferred_tool_call", tool_output("refunded", log=tool_log))
        flow = remote_flow(runner.base_url, "TriageAgent")

The server keeps a history cache per session as a real serving side does: a call whose
`history` reaches back past what it holds is answered `need_history` (forget it with
`forget_history()`, as a restarted runner process would). Every call is recorded with its
body, and a call whose client went away while it was held is counted in `disconnects`.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._loopback import ClientGone, Exchange, Handler, LoopbackServer, client_gone, read_body
from .tool_log import ToolRunLog


@dataclass
class RunnerCall:
    """One call as the server received it; a script answers it with `send`."""

    method: str
    body: dict[str, Any]
    exchange: Exchange
    handler: Handler
    answered: bool = False
    chunked: bool = False

    def send(self, line: Mapping[str, Any]) -> None:
        """Writes one NDJSON line (the head goes out with the first one)."""
        if not self.answered:
            self.exchange._head(
                200, {"Content-Type": "application/x-ndjson", "Transfer-Encoding": "chunked"}
            )
            self.answered = self.chunked = True
        self.exchange._chunk(json.dumps(line).encode() + b"\n")

    def gone(self) -> bool:
        return client_gone(self.handler.connection)


Script = Callable[[RunnerCall], None]


@dataclass
class RecordedCall:
    method: str
    body: dict[str, Any]
    outcome: str = ""  # "result", "need_history", "refused", "disconnected", "dropped"


# -- scripts --------------------------------------------------------------------------------


def _message(role: str, text: str | None = None, **fields: Any) -> dict[str, Any]:
    item = {"role": role, "text": text, **fields}
    return {"role": role, "framework_item": json.dumps(item), "text": text, **fields}


def final_text(text: str, *, deltas: int = 2) -> Script:
    """A model step that streams `text` as `text_delta` events and completes the turn."""

    def answer(call: RunnerCall) -> None:
        call.send({"accepted": True})
        size = max(1, -(-len(text) // max(1, deltas)))
        for start in range(0, len(text), size):
            call.send(
                {"event": {"type": "text_delta", "payload": {"delta": text[start : start + size]}}}
            )
        call.send({"heartbeat": True})
        usage = {"model_calls": 1, "input_tokens": 10, "output_tokens": 5}
        call.send(
            {
                "result": {
                    "kind": "turn_completed",
                    "new_messages": [_message("assistant", text)],
                    "usage": usage,
                    "model_call_metadata": None,
                    "turn_error": None,
                }
            }
        )

    return answer


def tool_calls(*calls: tuple[str, str, str], effect: str | None = None) -> Script:
    """A model step that asks for tools: (tool_call_id, tool_name, arguments) each."""

    def answer(call: RunnerCall) -> None:
        call.send({"accepted": True})
        requested = [
            {
                "tool_call_id": call_id,
                "tool_name": name,
                "arguments": arguments,
                "policy": None
                if effect is None
                else {"effect": effect, "requires_approval": False},
                "tool_source_reference": None,
            }
            for call_id, name, arguments in calls
        ]
        call.send(
            {
                "result": {
                    "kind": "tool_calls_requested",
                    "framework_run_state": json.dumps({"calls": [c[0] for c in calls]}),
                    "tool_calls": requested,
                    "usage": {"model_calls": 1},
                    "new_messages": [],
                    "model_call_metadata": None,
                }
            }
        )

    return answer


def tool_output(
    output: str, *, log: ToolRunLog | None = None, checkpoint: str | None = None
) -> Script:
    """A tool call that runs (recorded in `log`, outside any database) and returns `output`."""

    def answer(call: RunnerCall) -> None:
        call.send({"accepted": True})
        if log is not None:
            log.record(call.body["tool_call"]["tool_name"], attempt=call.body["attempt"])
        if checkpoint is not None:
            call.send({"checkpoint": checkpoint})
        call.send({"result": {"kind": "tool_execution_result", "output": output}})

    return answer


def tool_error(message: str) -> Script:
    def answer(call: RunnerCall) -> None:
        call.send({"accepted": True})
        call.send({"error": {"kind": "tool_execution_error", "message": message}})

    return answer


def runner_error(
    message: str,
    stack: str = "Error: boom\n    at runner.js:1:1",
    *,
    status_code: int | None = None,
    response_headers: dict[str, str] | None = None,
) -> Script:
    """Accepts the call, then fails it; with `status_code`, as a model provider's HTTP error."""
    error: dict[str, Any] = {"kind": "runner_error", "message": message, "stack": stack}
    if status_code is not None:
        error["status_code"] = status_code
        error["response_headers"] = response_headers or {}

    def answer(call: RunnerCall) -> None:
        call.send({"accepted": True})
        call.send({"error": error})

    return answer


def refuse(status: int = 503) -> Script:
    """Answers an HTTP error before `accepted`: the call never started."""

    def answer(call: RunnerCall) -> None:
        body = b'{"error": "not ready"}'
        call.exchange._head(
            status, {"Content-Type": "application/json", "Content-Length": str(len(body))}
        )
        call.exchange._write(body)
        call.answered = True

    return answer


def die_after_accept(*, log: ToolRunLog | None = None) -> Script:
    """Accepts (and, for a tool, runs it: recorded in `log`), then drops the connection."""

    def answer(call: RunnerCall) -> None:
        call.send({"accepted": True})
        if log is not None:
            log.record(call.body["tool_call"]["tool_name"], attempt=call.body["attempt"])
        raise _Drop

    return answer


def hold_until_gone(*, started: threading.Event | None = None, seconds: float = 30.0) -> Script:
    """Accepts, then sends heartbeats until the client closes the connection."""

    def answer(call: RunnerCall) -> None:
        call.send({"accepted": True})
        if started is not None:
            started.set()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if call.gone():
                raise ClientGone
            call.send({"heartbeat": True})
            time.sleep(0.05)
        raise _Drop

    return answer


class _Drop(Exception):
    """Close the connection without a result."""


# -- the server ------------------------------------------------------------------------------


@dataclass
class _Flow:
    capabilities: dict[str, bool] = field(default_factory=dict)
    # What describe says of the flow's session options (`session_options`), when set.
    session_options: dict[str, Any] = field(default_factory=dict)


def _described(flow: _Flow) -> dict[str, Any]:
    described: dict[str, Any] = {"capabilities": flow.capabilities}
    if flow.session_options:
        described["session_options"] = flow.session_options
    return described


class ScriptedRunnerServer(LoopbackServer):
    """Serves `describe` and the runner methods; each POST takes the next script of its
    method (a method without scripts left answers a `runner_error`)."""

    _thread_name = "scripted-runner"

    def __init__(
        self,
        flow_types: Iterable[str] = ("TriageAgent",),
        *,
        port: int = 0,
        protocol_version: int = 1,
        capabilities: Mapping[str, bool] | None = None,
        token: str | None = None,
    ) -> None:
        super().__init__(port)
        self.flows = {name: _Flow(dict(capabilities or {})) for name in flow_types}
        self.protocol_version = protocol_version
        self.token = token
        self.calls: list[RecordedCall] = []
        self.disconnects = 0
        self.describes = 0
        self._scripts: dict[str, deque[Script]] = {}
        self._history: dict[str, dict[int, dict[str, Any]]] = {}

    def script(self, method: str, *scripts: Script) -> None:
        with self._lock:
            self._scripts.setdefault(method, deque()).extend(scripts)

    def forget_history(self) -> None:
        """Forgets every cached message, as a restarted runner process would."""
        with self._lock:
            self._history.clear()

    def bodies(self, method: str) -> list[dict[str, Any]]:
        with self._lock:
            return [call.body for call in self.calls if call.method == method]

    def recorded(self, method: str) -> list[RecordedCall]:
        with self._lock:
            return [call for call in self.calls if call.method == method]

    def _authorized(self, handler: Handler) -> bool:
        return self.token is None or handler.headers.get("Authorization") == f"Bearer {self.token}"

    def _handle_unknown(self, handler: Handler) -> None:
        exchange = Exchange(handler)
        if handler.command == "GET" and handler.path.rstrip("/").endswith("/describe"):
            self.describes += 1
            flows = {name: _described(flow) for name, flow in self.flows.items()}
            answer = {"protocol_version": self.protocol_version, "flows": flows}
            status = 200 if self._authorized(handler) else 401
            self._json(exchange, status, answer)
            return
        self._json(exchange, 404, {"error": "not found"})

    @staticmethod
    def _json(exchange: Exchange, status: int, value: Any) -> None:
        body = json.dumps(value).encode()
        exchange._head(
            status, {"Content-Type": "application/json", "Content-Length": str(len(body))}
        )
        exchange._write(body)

    def _handle_post(self, handler: Handler) -> None:
        exchange = Exchange(handler)
        method = handler.path.rstrip("/").rsplit("/", 1)[-1]
        raw = read_body(handler)
        if raw is None:
            return
        body = json.loads(raw or b"{}")
        recorded = RecordedCall(method, body)
        with self._lock:
            self.calls.append(recorded)
        if not self._authorized(handler):
            self._json(exchange, 401, {"error": "unauthorized"})
            recorded.outcome = "refused"
            return
        with self._lock:
            missing = self._missing_history(body)
        if missing is not None:
            call = RunnerCall(method, body, exchange, handler)
            call.send({"need_history": {"after_sequence": missing}})
            exchange.end_stream()
            recorded.outcome = "need_history"
            return
        self._run_script(recorded, RunnerCall(method, body, exchange, handler))

    def _run_script(self, recorded: RecordedCall, call: RunnerCall) -> None:
        with self._lock:
            queue = self._scripts.get(call.method)
            script = queue.popleft() if queue else runner_error(f"no script left for {call.method}")
        try:
            script(call)
            if call.chunked:
                call.exchange.end_stream()
            recorded.outcome = "result"
        except ClientGone:
            with self._lock:
                self.disconnects += 1
            recorded.outcome = "disconnected"
        except _Drop:
            recorded.outcome = "dropped"
            call.handler.close_connection = True
            call.handler.connection.close()

    def _missing_history(self, body: Mapping[str, Any]) -> int | None:
        """Caches the call's messages; the sequence to resend after when some are missing."""
        turn = body.get("turn") if "history" not in body else body
        if not isinstance(turn, Mapping) or "history" not in turn:
            return None
        history = turn["history"]
        session = self._history.setdefault(str(body.get("flow_id")), {})
        for message in turn.get("messages") or ():
            session[int(message["sequence"])] = message
        first, last = int(history["first_sequence"]), int(history["last_sequence"])
        if last == 0 or int(history["messages_after"]) == 0:
            return None
        held = first - 1
        while held + 1 in session and held < last:
            held += 1
        return None if held >= last else held
