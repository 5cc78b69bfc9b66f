"""One runner call over HTTP: the POST, its NDJSON stream, and what each line means here.

A call is "not started" until the runner's `accepted` line arrives: anything that goes wrong
before it (connection refused, a 5xx, a stream without `accepted`) raises RunnerUnavailableError,
which a Step retries without counting a started attempt. After `accepted` the call has
started, and a stream that ends without `result` is an ordinary failure of the attempt.

While tracing is on, the POST carries the running Step attempt's span as W3C trace context
headers (`traceparent`, `tracestate`), so the runner's spans are children of the Step's.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from ..clock import step_deadline_ms
from ..errors import RemoteRunnerError, RunnerUnavailableError
from ..otel import trace_headers
from ..runner import EventWriter, ToolExecutionError
from ..types import json_text

# A runner that sends no line (no event, no heartbeat) for this long is treated as gone.
SILENCE_TIMEOUT_SECONDS = 60.0
CONNECT_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class NeedHistory:
    """The runner's cache lacks messages: resend the call with messages after this one."""

    after_sequence: int


@dataclass(frozen=True)
class LineHandlers:
    """Where the stream's non-final lines go (the callables the runner types carry)."""

    events: EventWriter | None = None
    heartbeat: Callable[[], None] | None = None
    checkpoint: Callable[[str], Awaitable[None]] | None = None
    # Called once the runner accepted the call (it started there).
    accepted: Callable[[], None] | None = None


@dataclass(frozen=True)
class Endpoint:
    """A runner URL, its token, and the silence after which a call is given up."""

    url: str
    token: str | None = None
    silence_timeout: float = SILENCE_TIMEOUT_SECONDS

    def headers(self) -> dict[str, str]:
        return {} if self.token is None else {"Authorization": f"Bearer {self.token}"}

    def timeout(self) -> httpx.Timeout:
        return httpx.Timeout(
            self.silence_timeout, connect=min(CONNECT_TIMEOUT_SECONDS, self.silence_timeout)
        )

    def method_url(self, method: str) -> str:
        return f"{self.url.rstrip('/')}/{method}"


async def post(
    endpoint: Endpoint, method: str, body: Mapping[str, Any], handlers: LineHandlers
) -> Any | NeedHistory:
    """POSTs one call and follows its stream to the `result` (or a `need_history` answer).

    A new client per call: a Worker may run Steps on more than one event loop, and closing
    the connection is how a cancelled Step tells the runner to stop."""
    url = endpoint.method_url(method)
    # The Step attempt's deadline (epoch ms), so the runner can bound its own work by it.
    body = {**body, "deadline": step_deadline_ms()}
    headers = {**endpoint.headers(), **trace_headers(), "Content-Type": "application/json"}
    # Not httpx's json=: its UTF-8 cannot carry an unpaired surrogate a stored text may hold.
    content = json_text(body).encode()
    try:
        async with (
            httpx.AsyncClient(timeout=endpoint.timeout(), headers=headers) as client,
            client.stream("POST", url, content=content) as response,
        ):
            await _check_status(response, url)
            return await _follow(response.aiter_lines(), url, handlers)
    except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as error:
        raise RunnerUnavailableError(f"the runner at {url} cannot be reached: {error}") from error


async def _check_status(response: httpx.Response, url: str) -> None:
    if response.status_code != 200:
        text = (await response.aread()).decode(errors="replace")
        raise _status_error(url, response.status_code, text)


def _status_error(url: str, status: int, text: str) -> RunnerUnavailableError | RemoteRunnerError:
    """A refusal before the call started: a 5xx may pass (the runner is unavailable), any
    other status will not."""
    message = f"the runner at {url} answered HTTP {status}: {text[:500]}"
    return RunnerUnavailableError(message) if status >= 500 else RemoteRunnerError(message)


async def _follow(lines: Any, url: str, handlers: LineHandlers) -> Any | NeedHistory:
    accepted = False
    try:
        async for raw in lines:
            if not raw.strip():
                continue
            line = _parse(raw, url)
            if not accepted:
                if "need_history" in line:
                    return NeedHistory(int(line["need_history"]["after_sequence"]))
                if line.get("accepted") is not True:
                    raise RunnerUnavailableError(
                        f"the runner at {url} did not accept the call: {raw}"
                    )
                accepted = True
                if handlers.accepted is not None:
                    handlers.accepted()
                continue
            if "result" in line:
                return line["result"]
            await _dispatch(line, url, handlers)
    except httpx.TransportError as error:
        if not accepted:
            raise RunnerUnavailableError(
                f"the runner at {url} did not accept the call: {error}"
            ) from error
        raise RemoteRunnerError(
            f"the call to {url} broke off after it started: {error!r}"
        ) from error
    if not accepted:
        raise RunnerUnavailableError(f"the runner at {url} closed the call before accepting it")
    raise RemoteRunnerError(f"the call to {url} ended after it started, without a result")


def _parse(raw: str, url: str) -> dict[str, Any]:
    try:
        line = json.loads(raw)
    except json.JSONDecodeError as error:
        raise RemoteRunnerError(
            f"the runner at {url} sent a line that is not JSON: {raw[:200]}"
        ) from error
    if not isinstance(line, dict):
        raise RemoteRunnerError(
            f"the runner at {url} sent a line that is not an object: {raw[:200]}"
        )
    return line


async def _dispatch(line: Mapping[str, Any], url: str, handlers: LineHandlers) -> None:
    """Applies one line between `accepted` and `result`, in the order received."""
    if "event" in line:
        event = line["event"]
        if handlers.events is not None:
            handlers.events.write(str(event["type"]), event.get("payload") or {})
    elif "heartbeat" in line:
        if handlers.heartbeat is not None:
            handlers.heartbeat()
    elif "checkpoint" in line:
        if handlers.checkpoint is None:
            raise RemoteRunnerError(f"the runner at {url} sent a checkpoint outside a tool call")
        await handlers.checkpoint(str(line["checkpoint"]))
    elif "error" in line:
        error = line["error"]
        if error.get("kind") == "tool_execution_error":
            raise ToolExecutionError(str(error.get("message", "")))
        raise _runner_error(error)
    else:
        raise RemoteRunnerError(f"the runner at {url} sent an unknown line: {dict(line)}")


def _runner_error(error: Mapping[str, Any]) -> RemoteRunnerError:
    """The exception for a runner's `error` line; a provider's HTTP status and retry headers
    come with it when the runner sent them."""
    status = error.get("status_code")
    headers = error.get("response_headers")
    return RemoteRunnerError(
        str(error.get("message", "")),
        error.get("stack"),
        status_code=status if isinstance(status, int) and not isinstance(status, bool) else None,
        response_headers=(
            {str(k): str(v) for k, v in headers.items()} if isinstance(headers, dict) else None
        ),
    )


async def get_json_async(endpoint: Endpoint, method: str) -> Any:
    """`get_json` on the running event loop, for a Worker that waits for a runner."""
    url = endpoint.method_url(method)
    try:
        async with httpx.AsyncClient(timeout=endpoint.timeout()) as client:
            response = await client.get(url, headers=endpoint.headers())
    except httpx.TransportError as error:
        raise RunnerUnavailableError(f"the runner at {url} cannot be reached: {error}") from error
    if response.status_code != 200:
        raise _status_error(url, response.status_code, response.text)
    return response.json()


def get_json(endpoint: Endpoint, method: str) -> Any:
    """A plain GET (`describe`), synchronous: flows are built before a Worker's loop runs.
    RunnerUnavailableError while the runner cannot be reached or answers a 5xx."""
    url = endpoint.method_url(method)
    try:
        response = httpx.get(url, headers=endpoint.headers(), timeout=endpoint.timeout())
    except httpx.TransportError as error:
        raise RunnerUnavailableError(f"the runner at {url} cannot be reached: {error}") from error
    if response.status_code != 200:
        raise _status_error(url, response.status_code, response.text)
    return response.json()
