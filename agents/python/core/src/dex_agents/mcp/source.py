"""McpToolSource: tools from MCP servers, each call in its own tool Step."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar, cast

from mcp import Client
from mcp.types import CallToolResult, InputRequiredResult, RequestParamsMeta, Tool

from .. import texts
from ..errors import McpToolCallInterruptedError
from ..policy import resolve_tool_policy
from ..runner import (
    DeferredToolCall,
    DeferredToolExecution,
    DeferredToolOutcome,
    PolicyResolver,
    ToolExecutionError,
    ToolExecutionResult,
    ToolPolicy,
    ToolTaskCancellation,
    ToolTaskPoll,
    ToolTaskPollOutcome,
    ToolTaskStarted,
)
from ..stepkit import NonRetryableError
from ..types import AgentToolCall, ToolEffect
from .config import HttpServer, McpServerConfig
from .connection import NO_RESULT_CODES, HandshakeFailed, connect, describe, mcp_error
from .policies import annotation_effect
from .questions import describe_all
from .results import result_of
from .task_calls import TaskCheckpoint, wait_for_task
from .task_poll import McpTaskLostError, McpTaskUnreachableError, TaskPoller, wait_out_outage
from .tasks import TaskCreated, cancel_task, interval_seconds

OutcomeT = TypeVar("OutcomeT")

IDEMPOTENCY_KEY_META: Final = "io.superdurable.dex/idempotencyKey"
_TOOL_NAME: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

logger = logging.getLogger("dex_agents.mcp")


@dataclass(frozen=True)
class McpTool:
    """One listed MCP tool as the agent sees it."""

    name: str
    server: str
    mcp_name: str
    description: str
    parameters: Mapping[str, Any]
    effect: ToolEffect | None

    def definition(self) -> dict[str, Any]:
        """The Chat Completions tool definition."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
        }

    @property
    def reference(self) -> str:
        return json.dumps({"server": self.server, "tool": self.mcp_name})


class McpToolSource:
    """Tools of MCP servers configured by the Worker's code, named `<server>__<tool>`.

    `list_tools()` lists every server once and caches the result; a server that cannot be
    listed, and a name that collides with an earlier one, are left out with a warning.
    `policies` are explicit ToolPolicy values by agent tool name; they win over annotations.
    """

    def __init__(
        self,
        servers: Sequence[McpServerConfig],
        *,
        policies: Mapping[str, ToolPolicy] | None = None,
    ) -> None:
        names = [server.name for server in servers]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"two MCP servers are named {duplicates[0]!r}")
        self.servers: dict[str, McpServerConfig] = {server.name: server for server in servers}
        self.policies: dict[str, ToolPolicy] = dict(policies or {})
        self._tools: dict[str, McpTool] | None = None

    # -- listing -----------------------------------------------------------------------------

    async def list_tools(self, *, refresh: bool = False) -> Sequence[McpTool]:
        if self._tools is None or refresh:
            tools: dict[str, McpTool] = {}
            for server in self.servers.values():
                for tool in await self._list_server(server):
                    self._add(tools, tool)
            self._tools = tools
        return list(self._tools.values())

    @property
    def tools(self) -> Mapping[str, McpTool]:
        """The cached tools by agent name; empty before `list_tools()`."""
        return dict(self._tools or {})

    async def _list_server(self, server: McpServerConfig) -> list[McpTool]:
        try:
            async with connect(server) as client:
                listed = await client.list_tools()
        except Exception as error:
            logger.warning(
                "MCP server %s left out: its tools could not be listed: %s",
                server.name,
                describe(error),
            )
            return []
        return [_as_agent_tool(server.name, tool) for tool in listed.tools]

    @staticmethod
    def _add(tools: dict[str, McpTool], tool: McpTool) -> None:
        if not _TOOL_NAME.match(tool.name):
            logger.warning(
                "MCP tool %r of server %s left out: %r is not a usable tool name "
                "(1 to 64 letters, digits, '_' or '-')",
                tool.mcp_name,
                tool.server,
                tool.name,
            )
        elif tool.name in tools:
            logger.warning(
                "MCP tool %r of server %s left out: its name %r is taken by an earlier tool",
                tool.mcp_name,
                tool.server,
                tool.name,
            )
        else:
            tools[tool.name] = tool

    # -- policies ----------------------------------------------------------------------------

    def merge_tool_policies(
        self, application_policies: Mapping[str, ToolPolicy] | None = None
    ) -> dict[str, ToolPolicy]:
        """The source's explicit policies under the application's, which win."""
        return {**self.policies, **(application_policies or {})}

    def resolve_policy(
        self,
        name: str,
        resolve: PolicyResolver | None = None,
        default_effect: ToolEffect = "unclassified",
    ) -> ToolPolicy:
        """The call's policy: an explicit ToolPolicy wins, then the annotation effect."""
        tool = self._cached(name)
        if resolve is not None:
            explicit = self.policies.get(name, ToolPolicy())
            return resolve(name, explicit.effect or tool.effect, explicit.requires_approval)
        return resolve_tool_policy(
            name, self.policies, default_effect, framework_effect=tool.effect
        )

    def deferred_tool_call(
        self,
        tool_call_id: str,
        name: str,
        arguments: str,
        resolve: PolicyResolver | None = None,
    ) -> DeferredToolCall:
        """The deferred call of a listed tool, with its policy and its server reference."""
        tool = self._cached(name)
        return DeferredToolCall(
            tool_call_id=tool_call_id,
            tool_name=name,
            arguments=arguments,
            policy=self.resolve_policy(name, resolve),
            tool_source_reference=tool.reference,
        )

    def tool_definitions(self) -> list[dict[str, Any]]:
        return [tool.definition() for tool in (self._tools or {}).values()]

    def has_tool(self, name: str) -> bool:
        return name in (self._tools or {})

    def owns(self, record: AgentToolCall) -> bool:
        """A record whose reference names one of this source's servers, or an unreferenced
        record of a listed tool."""
        if record.tool_source_reference is None:
            return self.has_tool(record.tool_name)
        try:
            return (
                self._reference(record.tool_source_reference, record.tool_name)[0] in self.servers
            )
        except ToolExecutionError:
            return False

    def _cached(self, name: str) -> McpTool:
        tool = (self._tools or {}).get(name)
        if tool is None:
            raise KeyError(f"no listed MCP tool is named {name!r}; call list_tools() first")
        return tool

    # -- calls -------------------------------------------------------------------------------

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> DeferredToolOutcome:
        """Runs the call in the tool Step, from the record's reference (no listing).

        A task of a Streamable HTTP server is saved as the attempt's heartbeat checkpoint and
        becomes ToolTaskStarted when the runner polls tasks; a retried attempt returns the
        checkpoint's task instead of calling again. Any other task is polled here.
        """
        record = call.tool_call
        server_name, mcp_name = self._reference(record.tool_source_reference, record.tool_name)
        server = self._server(server_name)
        saved = TaskCheckpoint.load(call.heartbeat_checkpoint)
        if saved is not None and saved.server == server_name and isinstance(server, HttpServer):
            if call.supports_tool_tasks:
                return ToolTaskStarted(saved.task_id, saved.poll_interval_seconds)
            return await self._wait_on_new_connection(server, mcp_name, saved, call.heartbeat)
        arguments = _arguments(record.arguments, record.tool_name)
        call.heartbeat()
        return await self._call(server, mcp_name, arguments, call.idempotency_key, call)

    async def call_tool(
        self, server_name: str, mcp_name: str, arguments: dict[str, Any], idempotency_key: str
    ) -> ToolExecutionResult:
        """One `tools/call` on a new connection, with the key in `_meta`; a task it starts is
        polled to its end here."""
        server = self._server(server_name)
        outcome = await self._call(server, mcp_name, arguments, idempotency_key, None)
        if not isinstance(outcome, ToolExecutionResult):  # without a call, tasks end here
            raise TypeError(f"MCP tool {mcp_name} returned {outcome!r}")
        return outcome

    async def poll_tool_task(self, poll: ToolTaskPoll) -> ToolTaskPollOutcome:
        """One `tasks/get` of the call's task (ToolTaskPoller); delivers a pending answer."""
        server, poller_of = self._task_of(poll.tool_call)
        try:
            async with connect(server) as client:
                return await _unwrapped(poller_of(client).poll(poll))
        except (ToolExecutionError, NonRetryableError):
            raise
        except Exception as error:
            failure = _poll_error(server.name, poll.tool_call.task_id or "", error)
            if isinstance(failure, McpTaskUnreachableError) and isinstance(server, HttpServer):
                failure.__cause__ = error
                return wait_out_outage(poll, failure, server.task_outage_seconds)
            raise failure from error

    async def cancel_tool_task(self, cancellation: ToolTaskCancellation) -> None:
        """Sends `tasks/cancel` for the call's task (ToolTaskCanceller); any answer from the
        server, an error included, counts as done."""
        if cancellation.tool_call.task_id is None:
            return
        server, _ = self._task_of(cancellation.tool_call)
        try:
            async with connect(server) as client:
                await cancel_task(client, cancellation.tool_call.task_id)
        except Exception as error:
            found = mcp_error(error)
            if found is None or found.code in NO_RESULT_CODES:
                raise McpTaskUnreachableError(
                    f"MCP server {server.name} could not be reached to cancel task "
                    f"{cancellation.tool_call.task_id}: {describe(error)}"
                ) from error

    def _task_of(
        self, record: AgentToolCall
    ) -> tuple[McpServerConfig, Callable[[Client], TaskPoller]]:
        server_name, mcp_name = self._reference(record.tool_source_reference, record.tool_name)
        server = self._server(server_name)
        task_id = record.task_id
        if not task_id:
            raise NonRetryableError(f"tool call {record.tool_call_id} has no MCP task")
        return server, lambda client: TaskPoller(client, server_name, mcp_name, task_id)

    def _server(self, server_name: str) -> McpServerConfig:
        server = self.servers.get(server_name)
        if server is None:
            raise ToolExecutionError(f"MCP server {server_name!r} is not configured on this Worker")
        return server

    async def _call(
        self,
        server: McpServerConfig,
        mcp_name: str,
        arguments: dict[str, Any],
        idempotency_key: str,
        call: DeferredToolExecution | None,
    ) -> DeferredToolOutcome:
        sent = False
        try:
            async with connect(server) as client:
                # Listed on the call's own connection, which the SDK needs to send a tool's
                # `Mcp-Param-*` headers (and to check its output schema after the call).
                await client.list_tools()
                sent = True
                result = await client.session.call_tool(
                    mcp_name,
                    arguments,
                    meta=_key_meta(idempotency_key),
                    allow_input_required=True,
                    allow_claimed=True,
                )
                if isinstance(result, TaskCreated):
                    return await _unwrapped(self._started(client, server, mcp_name, result, call))
        except HandshakeFailed as error:
            raise ToolExecutionError(
                f"MCP server {server.name} could not be reached, so {mcp_name} was not "
                f"called: {error}"
            ) from error
        except (ToolExecutionError, NonRetryableError, McpToolCallInterruptedError):
            raise
        except Exception as error:
            raise _call_error(server.name, mcp_name, error, sent) from error
        if isinstance(result, InputRequiredResult):
            raise ToolExecutionError(
                texts.MCP_INPUT_NOT_SUPPORTED.format(
                    tool=mcp_name,
                    server=server.name,
                    requested=_requested(result),
                )
            )
        if not isinstance(result, CallToolResult):
            raise ToolExecutionError(
                f"MCP tool {mcp_name} of server {server.name} answered with an unknown result"
            )
        return result_of(server.name, mcp_name, result)

    async def _started(
        self,
        client: Client,
        server: McpServerConfig,
        mcp_name: str,
        created: TaskCreated,
        call: DeferredToolExecution | None,
    ) -> DeferredToolOutcome:
        """A task started by tools/call: saved first, then handed to the session to poll, or
        polled here."""
        interval = interval_seconds(created.poll_interval_ms)
        remote = isinstance(server, HttpServer)
        if call is not None and remote:
            saved = TaskCheckpoint(server.name, created.task_id, interval)
            await call.save_heartbeat_checkpoint(saved.dump())
            if call.supports_tool_tasks:
                return ToolTaskStarted(created.task_id, interval)
        poller = TaskPoller(client, server.name, mcp_name, created.task_id)
        heartbeat = call.heartbeat if call is not None else _no_heartbeat
        return await wait_for_task(poller, interval, server.task_wait_seconds, heartbeat)

    async def _wait_on_new_connection(
        self,
        server: HttpServer,
        mcp_name: str,
        saved: TaskCheckpoint,
        heartbeat: Callable[[], None],
    ) -> ToolExecutionResult:
        try:
            async with connect(server) as client:
                poller = TaskPoller(client, server.name, mcp_name, saved.task_id)
                return await _unwrapped(
                    wait_for_task(
                        poller, saved.poll_interval_seconds, server.task_wait_seconds, heartbeat
                    )
                )
        except (ToolExecutionError, NonRetryableError, McpToolCallInterruptedError):
            raise
        except Exception as error:
            raise _poll_error(server.name, saved.task_id, error) from error

    def _reference(self, reference: str | None, tool_name: str) -> tuple[str, str]:
        if reference is None:
            tool = self._cached_or_none(tool_name)
            if tool is None:
                raise ToolExecutionError(f"unknown tool {tool_name!r}")
            return tool.server, tool.mcp_name
        try:
            parsed = json.loads(reference)
            return str(parsed["server"]), str(parsed["tool"])
        except (ValueError, KeyError, TypeError):
            raise ToolExecutionError(
                f"tool {tool_name}: its MCP reference {reference[:80]!r} is not readable"
            ) from None

    def _cached_or_none(self, name: str) -> McpTool | None:
        return (self._tools or {}).get(name)


def _as_agent_tool(server: str, tool: Tool) -> McpTool:
    return McpTool(
        name=f"{server}__{tool.name}",
        server=server,
        mcp_name=tool.name,
        description=tool.description or tool.title or tool.name,
        parameters=tool.input_schema,
        effect=annotation_effect(tool.annotations),
    )


def _key_meta(idempotency_key: str) -> RequestParamsMeta:
    # An open map whose extra keys mypy cannot see.
    return cast(RequestParamsMeta, {IDEMPOTENCY_KEY_META: idempotency_key})


def _arguments(text: str, tool_name: str) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ToolExecutionError(
            f"invalid arguments for tool {tool_name}: arguments must be a JSON object"
        )
    return value


def _call_error(server: str, tool: str, error: Exception, sent: bool) -> Exception:
    found = mcp_error(error)
    if found is not None and found.code not in NO_RESULT_CODES:
        return ToolExecutionError(f"MCP tool {tool} of server {server} failed: {found}")
    if not sent:
        return ToolExecutionError(
            f"MCP server {server} could not be reached, so {tool} was not called: {describe(error)}"
        )
    return McpToolCallInterruptedError(
        f"MCP tool {tool} of server {server} was called and no result came back: {describe(error)}"
    )


def _no_heartbeat() -> None:
    pass


def _requested(result: InputRequiredResult) -> str:
    raw = {
        key: request.model_dump(by_alias=True)
        for key, request in (result.input_requests or {}).items()
    }
    return describe_all(raw, dict(result.input_requests or {}))


async def _unwrapped(work: Awaitable[OutcomeT]) -> OutcomeT:
    """Runs `work`; the call's own outcome errors leave unwrapped from anyio's groups."""
    try:
        return await work
    except BaseExceptionGroup as group:
        own = _own_error(group)
        if own is not None:
            raise own from None
        raise


def _own_error(error: BaseException) -> BaseException | None:
    if isinstance(error, (ToolExecutionError, NonRetryableError, McpToolCallInterruptedError)):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = _own_error(inner)
            if found is not None:
                return found
    return None


def _poll_error(server: str, task_id: str, error: Exception) -> Exception:
    """An unknown task goes to the failure route at once; an unreachable server fails the
    attempt, so the Step's attempts decide."""
    own = _own_error(error)
    if own is not None and isinstance(own, Exception):
        return own
    found = mcp_error(error)
    if found is not None and found.code not in NO_RESULT_CODES:
        return McpTaskLostError(f"MCP server {server} does not know task {task_id}: {found}")
    return McpTaskUnreachableError(
        f"MCP server {server} could not be reached to read task {task_id}: {describe(error)}"
    )
