"""McpToolSource against the real test server over stdio and Streamable HTTP: listing,
policies from annotations, and calls with their errors. Tools count their runs in a file."""

from __future__ import annotations

import asyncio
import json
import logging
import sys

import pytest

from dex_agents.errors import DexAgentsError
from dex_agents.mcp import (
    IDEMPOTENCY_KEY_META,
    HttpServer,
    McpToolCallInterruptedError,
    McpToolSource,
    StdioServer,
)
from dex_agents.runner import DeferredToolExecution, ToolExecutionError, ToolPolicy
from dex_agents.types import AgentToolCall

from .gateway import failing_gateway
from .servers import HttpServerProcess, RunLog, free_port, stdio_server


def execution(
    name: str, arguments: dict[str, object], reference: str | None
) -> DeferredToolExecution:
    beats: list[int] = []

    async def save(_: str) -> None:
        return None

    record = AgentToolCall(
        tool_call_id="call-1",
        turn_id="turn-1",
        tool_name=name,
        arguments=json.dumps(arguments),
        effect="read",
        requires_approval=False,
        status="approved",
        deferral_order=0,
        tool_source_reference=reference,
    )
    return DeferredToolExecution(
        flow_id="flow-1",
        turn_id="turn-1",
        step_execution_id="step-1",
        tool_call=record,
        idempotency_key="flow-1/turn-1/call-1",
        attempt=1,
        events=None,  # type: ignore[arg-type]
        heartbeat=lambda: beats.append(1),
        save_heartbeat_checkpoint=save,
    )


async def listed_source(*servers: StdioServer | HttpServer, **options: object) -> McpToolSource:
    source = McpToolSource(list(servers), **options)  # type: ignore[arg-type]
    await source.list_tools()
    return source


async def test_lists_both_transports_as_server_prefixed_definitions(
    run_log: RunLog, http_server: HttpServerProcess
) -> None:
    source = await listed_source(stdio_server("local", run_log), http_server.config("remote"))
    names = set(source.tools)
    assert {"local__lookup", "remote__lookup", "local__set_value", "remote__hang"} <= names
    definition = source.tools["remote__lookup"].definition()
    assert definition["function"]["description"] == "The weather in a city."
    assert definition["function"]["parameters"]["required"] == ["city"]
    assert run_log.runs() == []  # listing runs no tool


async def test_unlistable_server_and_unusable_name_are_left_out_with_a_warning(
    run_log: RunLog, caplog: pytest.LogCaptureFixture
) -> None:
    dead = HttpServer("dead", url=f"http://127.0.0.1:{free_port()}/mcp")
    caplog.set_level(logging.WARNING, logger="dex_agents.mcp")
    source = await listed_source(dead, stdio_server("local", run_log))
    assert not any(name.startswith("dead__") for name in source.tools)
    assert "local__lookup" in source.tools
    assert "MCP server dead left out" in caplog.text
    assert "local__" + "x" * 70 not in source.tools
    assert "is not a usable tool name" in caplog.text


async def test_handshake_is_bounded(run_log: RunLog) -> None:
    silent = StdioServer(
        "silent",
        command=sys.executable,
        args=["-c", "import time; time.sleep(60)"],
        handshake_timeout_seconds=1,
    )
    source = McpToolSource([silent])
    started = asyncio.get_running_loop().time()
    with pytest.raises(ToolExecutionError, match="could not be reached"):
        await source.call_tool("silent", "lookup", {}, "k")
    assert asyncio.get_running_loop().time() - started < 10


async def test_policies_follow_annotations_and_explicit_policies_win(run_log: RunLog) -> None:
    explicit = {"local__delete_item": ToolPolicy(effect="non_idempotent_write")}
    source = await listed_source(stdio_server("local", run_log), policies=explicit)
    effects = {name: source.resolve_policy(name).effect for name in source.tools}
    assert effects["local__lookup"] == "read"
    assert effects["local__set_value"] == "idempotent_write"  # destructiveHint too
    assert effects["local__hang"] == "unclassified"  # the default
    assert effects["local__delete_item"] == "non_idempotent_write"
    assert source.resolve_policy("local__set_value").requires_approval is False
    merged = source.merge_tool_policies({"other": ToolPolicy(effect="read")})
    assert set(merged) == {"local__delete_item", "other"}


async def test_deferred_tool_call_carries_the_server_reference(run_log: RunLog) -> None:
    source = await listed_source(stdio_server("local", run_log))
    call = source.deferred_tool_call("c1", "local__lookup", '{"city": "Oslo"}')
    assert call.policy == ToolPolicy(effect="read", requires_approval=False)
    assert json.loads(call.tool_source_reference or "") == {"server": "local", "tool": "lookup"}


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_call_sends_the_idempotency_key_in_meta(
    transport: str, run_log: RunLog, http_server: HttpServerProcess
) -> None:
    config = stdio_server("s", run_log) if transport == "stdio" else http_server.config("s")
    source = await listed_source(config)
    reference = source.tools["s__set_value"].reference
    # A fresh source with no listing calls from the reference alone.
    result = await McpToolSource([config]).execute_deferred_tool_call(
        execution("s__set_value", {"name": "a", "value": "1"}, reference)
    )
    assert result.output == "a=1"
    runs = run_log.runs("set_value")
    assert [run["key"] for run in runs] == ["flow-1/turn-1/call-1"]
    assert IDEMPOTENCY_KEY_META == "io.superdurable.dex/idempotencyKey"


async def test_is_error_result_raises_tool_execution_error(run_log: RunLog) -> None:
    source = await listed_source(stdio_server("local", run_log))
    with pytest.raises(ToolExecutionError, match="the broken tool broke"):
        await source.execute_deferred_tool_call(
            execution("local__broken", {}, source.tools["local__broken"].reference)
        )
    assert len(run_log.runs("broken")) == 1


async def test_unreachable_server_means_never_sent(run_log: RunLog) -> None:
    source = McpToolSource([HttpServer("gone", url=f"http://127.0.0.1:{free_port()}/mcp")])
    with pytest.raises(ToolExecutionError, match="was not called"):
        await source.call_tool("gone", "lookup", {"city": "x"}, "k")
    with pytest.raises(ToolExecutionError, match="not configured"):
        await source.call_tool("elsewhere", "lookup", {}, "k")


async def test_server_dying_mid_call_is_an_interruption(
    run_log: RunLog, http_server: HttpServerProcess
) -> None:
    source = McpToolSource([http_server.config("remote")])
    call = asyncio.create_task(source.call_tool("remote", "hang", {}, "key-1"))
    await asyncio.to_thread(run_log.wait_for, "hang")
    http_server.stop()
    with pytest.raises(McpToolCallInterruptedError, match="no result came back") as caught:
        await asyncio.wait_for(call, 30)
    assert isinstance(caught.value, DexAgentsError)
    assert len(run_log.runs("hang")) == 1


async def test_server_restart_between_listing_and_calling_is_harmless(
    run_log: RunLog, http_server: HttpServerProcess
) -> None:
    source = await listed_source(http_server.config("remote"))
    http_server.stop()
    http_server.start()
    result = await source.call_tool("remote", "lookup", {"city": "Oslo"}, "k")
    assert result.output == "sunny in Oslo"
    assert len(run_log.runs("lookup")) == 1


def test_bad_configuration_is_refused() -> None:
    with pytest.raises(ValueError, match="single '_'"):
        StdioServer("a__b", command="x")
    with pytest.raises(ValueError, match="http"):
        HttpServer("a", url="ftp://x")
    with pytest.raises(ValueError, match="two MCP servers"):
        McpToolSource([StdioServer("a", command="x"), StdioServer("a", command="y")])


async def test_http_500_after_the_call_ran_is_an_interruption(
    run_log: RunLog, http_server: HttpServerProcess
) -> None:
    """The SDK reports the status as -32603, which a gateway can send after the tool ran."""
    with failing_gateway(http_server.url) as url:
        source = McpToolSource([HttpServer("gw", url=url)])
        with pytest.raises(McpToolCallInterruptedError):
            await source.call_tool("gw", "lookup", {"city": "Rome"}, "key-500")
    assert [run["key"] for run in run_log.runs("lookup")] == ["key-500"]


async def test_explicit_approval_keeps_the_annotation_effect(run_log: RunLog) -> None:
    policies = {"local__lookup": ToolPolicy(requires_approval=True)}
    source = await listed_source(stdio_server("local", run_log), policies=policies)
    assert source.resolve_policy("local__lookup") == ToolPolicy("read", True)
