"""A traced Worker's calls to a remote runner carry the Step attempt's span as W3C trace
context headers, so the runner's spans are its children; an untraced Worker's carry none.
The runner is the scripted runner server on loopback, the spans come from the SDK in
process."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from dex_agents import Worker
from dex_agents.remote import remote_flow
from dex_agents.testing.remote_runner_server import (
    RunnerCall,
    Script,
    ScriptedRunnerServer,
    final_text,
    tool_calls,
    tool_output,
)
from dex_agents.testing.sessions import turns_done

from .spans import from_sdk, of_session

FLOW = "Remote"


@pytest.fixture
def runner() -> Iterator[ScriptedRunnerServer]:
    with ScriptedRunnerServer([FLOW]) as server:
        yield server


class Headers:
    """The trace context headers each runner call arrived with, in order."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []

    def recording(self, script: Script) -> Script:
        def answer(call: RunnerCall) -> None:
            self.seen.append((call.method, call.handler.headers.get("traceparent")))
            script(call)

        return answer


def _script(runner: ScriptedRunnerServer, headers: Headers) -> None:
    runner.script(
        "run_model_step",
        headers.recording(tool_calls(("c1", "lookup", "{}"), effect="read")),
        headers.recording(final_text("Found it.")),
    )
    runner.script("execute_deferred_tool_call", headers.recording(tool_output("found")))


async def test_each_call_names_its_attempts_span_as_parent(runner, database_url, client):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    headers = Headers()
    _script(runner, headers)
    flows = [remote_flow(runner.base_url, FLOW)]
    async with Worker(flows, database_url=database_url, tracing=provider):
        session = await client.start_session(FLOW, "Look it up.")
        await client.wait_for(session, turns_done(1))
    root, chat1, tool, chat2 = of_session(from_sdk(exporter.get_finished_spans()), session)

    assert [s.step for s in (root, chat1, tool, chat2)] == [
        ("StartAgentSession", f"invoke_agent {FLOW}"),
        ("RunModel", "chat"),
        ("CallTool", "execute_tool lookup"),
        ("RunModel", "chat"),
    ]
    methods = ["run_model_step", "execute_deferred_tool_call", "run_model_step"]
    assert [method for method, _ in headers.seen] == methods
    for (_, traceparent), span in zip(headers.seen, (chat1, tool, chat2), strict=True):
        assert span.is_named_by(traceparent), (traceparent, span)
    for span in (chat1, tool, chat2):
        assert (span.trace_id, span.parent_id) == (root.trace_id, root.span_id)
    # Started before its outcome was known, a remote model call's span is a CLIENT span (the
    # Worker calls the runner); it still gets its attributes when it ends.
    assert (chat1.kind, tool.kind, chat2.kind) == ("CLIENT", "INTERNAL", "CLIENT")
    assert chat1.attributes["dex.tool_call.ids"] == ["c1"]
    assert tool.attributes["gen_ai.tool.call.id"] == "c1"
    assert tool.attributes["dex.step.attempt"] == 1


async def test_an_untraced_workers_calls_carry_no_trace_context(runner, database_url, client):
    headers = Headers()
    _script(runner, headers)
    async with Worker([remote_flow(runner.base_url, FLOW)], database_url=database_url):
        session = await client.start_session(FLOW, "Look it up.")
        await client.wait_for(session, turns_done(1))

    assert headers.seen == [
        ("run_model_step", None),
        ("execute_deferred_tool_call", None),
        ("run_model_step", None),
    ]
