"""Traces across the runner wire: a real Python Worker with tracing on and its TypeScript
runner in a Node process (traced_flows.py, traced-app.ts) export to one OTLP receiver on
loopback, and the runner's spans are children of the Worker's Step attempt spans, in their
trace: each `dex.runner <method>` span under the `chat` or `execute_tool` span of the Step
that made the call, and the tool's own span under its call's."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from dex_agents import AgentClient
from dex_agents.testing.model_server import ScriptedModelServer, reply_text, reply_tools
from dex_agents.testing.otlp import OtlpReceiver, SpanView
from dex_agents.testing.processes import WorkerProcess
from dex_agents.testing.sessions import turns_done


@pytest.fixture
def worker_target() -> str:
    return "traced_flows:flows"


@pytest.fixture
def worker_cwd() -> Path:
    return Path(__file__).resolve().parent


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as found:
        yield found


async def test_runner_spans_are_children_of_the_worker_step_spans(
    make_worker: Callable[..., WorkerProcess],
    model: ScriptedModelServer,
    client: AgentClient,
    receiver: OtlpReceiver,
) -> None:
    model.enqueue(reply_tools(("c1", "lookup", {"topic": "otters"})), reply_text("Otters."))
    worker = make_worker(
        DEX_AGENTS_TRACING="1",
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
        OTEL_BSP_SCHEDULE_DELAY="50",
    ).start()
    session = await client.start_session("Traced", "Tell me about otters.")
    await client.wait_for(session, turns_done(1))
    # The Worker's 4 spans, the runner's 3 calls (and any other call a Step made), the tool's.
    found = receiver.wait_for(8, session)
    worker.stop()

    steps = {
        s.attributes["dex.step.execution_id"]: s
        for s in found
        if s.name.startswith(("chat", "execute_tool"))
    }
    calls = [s for s in found if s.name.startswith("dex.runner ")]
    assert sorted((steps[c.attributes["dex.step.execution_id"]].name, c.name) for c in calls) == [
        ("chat scripted-model", "dex.runner run_model_step"),
        ("chat scripted-model", "dex.runner run_model_step"),
        ("execute_tool lookup", "dex.runner execute_deferred_tool_call"),
    ]
    for call in calls:
        step = steps[call.attributes["dex.step.execution_id"]]
        assert (call.trace_id, call.parent_id) == (step.trace_id, step.span_id), call
        assert call.kind == "SERVER"
        assert call.attributes["dex.flow.id"] == call.attributes["session.id"] == session
        assert call.attributes["dex.step.attempt"] == step.attributes["dex.step.attempt"] == 1
    root = _named(found, "invoke_agent Traced")
    assert {s.trace_id for s in found} == {root.trace_id}
    assert {s.parent_id for s in steps.values()} == {root.span_id}
    lookup_call = _named(found, "dex.runner execute_deferred_tool_call")
    assert lookup_call.attributes["dex.tool_call.id"] == "c1"
    assert _named(found, "app.lookup").parent_id == lookup_call.span_id


def _named(spans: list[SpanView], name: str) -> SpanView:
    (found,) = (s for s in spans if s.name == name)
    return found
