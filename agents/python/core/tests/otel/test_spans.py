"""The span trees of real sessions on an in-process Worker whose tracer provider exports to
the SDK's InMemorySpanExporter: a turn with two model calls and a read, an approval across a
Worker restart, a retried model call, compaction."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager

import pytest
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import NoOpTracerProvider

from dex_agents import Worker
from dex_agents.testing import ScriptedReply, reply_text, reply_tools
from dex_agents.testing.scripted_runner import MODEL_URL_ENV
from dex_agents.testing.sessions import pending_interrupt, turns_done

from ..apps import tasks as tasks_app
from . import app
from .spans import (
    SpanView,
    check_common,
    from_sdk,
    of_session,
    stored_record_trace_context,
    stored_trace_context,
)

Spans = Callable[[str], list[SpanView]]


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    found = InMemorySpanExporter()
    yield found
    found.shutdown()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> TracerProvider:
    made = TracerProvider()
    made.add_span_processor(SimpleSpanProcessor(exporter))
    return made


@pytest.fixture
def spans(exporter: InMemorySpanExporter) -> Spans:
    return lambda session_id: of_session(from_sdk(exporter.get_finished_spans()), session_id)


@pytest.fixture
def traced_worker(monkeypatch, model, tool_log, database_url, provider):
    monkeypatch.setenv(MODEL_URL_ENV, model.base_url)
    monkeypatch.setattr(app, "LOG", tool_log)

    @asynccontextmanager
    async def run() -> AsyncIterator[Worker]:
        async with Worker(app.flows, database_url=database_url, tracing=provider) as worker:
            yield worker

    return run


async def test_a_turn_with_two_model_calls_and_a_read(traced_worker, model, client, spans):
    model.enqueue(
        reply_tools(("r1", "get_weather", {"city": "Lima"})),
        reply_text("Sunny in Lima."),
        reply_text("You are welcome."),
    )
    async with traced_worker():
        session = await client.start_session("Traced", "Weather in Lima?")
        await client.wait_for(session, turns_done(1))
        first = spans(session)
        assert await client.send_user_message(session, "Thanks!")
        await client.wait_for(session, turns_done(2))

    found = spans(session)
    root, chat1, tool, chat2, root2, chat3 = found
    assert found[:4] == first
    assert [s.step for s in found] == [
        ("StartAgentSession", "invoke_agent Traced"),
        ("RunModel", "chat scripted-model"),
        ("CallTool", "execute_tool get_weather"),
        ("RunModel", "chat scripted-model"),
        ("AwaitUserMessage", "invoke_agent Traced"),
        ("RunModel", "chat scripted-model"),
    ]
    for span in found:
        check_common(span, session)
        assert not span.error
    # One trace per activation; the second root links to the first.
    assert root.parent_id is None and root.links == () and root.kind == "INTERNAL"
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["gen_ai.agent.name"] == "Traced"
    for child in (chat1, tool, chat2):
        assert (child.trace_id, child.parent_id) == (root.trace_id, root.span_id)
    assert root2.parent_id is None and root2.trace_id != root.trace_id
    assert root2.links == ((root.trace_id, root.span_id),)
    assert (chat3.trace_id, chat3.parent_id) == (root2.trace_id, root2.span_id)
    assert root2.attributes["dex.agent.turn.id"] == "turn-2"
    assert chat1.attributes["dex.agent.turn.id"] == "turn-1"

    # The model calls: CLIENT spans named and annotated from ModelCallMetadata, with usage.
    assert chat1.kind == chat2.kind == "CLIENT"
    assert chat1.attributes["gen_ai.operation.name"] == "chat"
    assert chat1.attributes["gen_ai.provider.name"] == "openai"
    assert chat1.attributes["gen_ai.request.model"] == "scripted-model"
    assert chat1.attributes["gen_ai.response.model"] == "scripted-model"
    assert chat1.attributes["gen_ai.response.id"]
    assert chat1.attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert chat2.attributes["gen_ai.response.finish_reasons"] == ["stop"]
    assert chat1.attributes["gen_ai.usage.input_tokens"] > 0
    assert chat1.attributes["gen_ai.usage.output_tokens"] > 0
    # Content by reference: the message sequences the call saw, the tool call IDs it asked for.
    assert chat1.attributes["dex.input.messages.first_sequence"] == 1
    assert chat1.attributes["dex.input.messages.last_sequence"] == 1
    assert chat1.attributes["dex.tool_call.ids"] == ["r1"]
    assert chat3.attributes["dex.input.messages.last_sequence"] == 5
    for span in found:
        assert not {"gen_ai.input.messages", "gen_ai.tool.call.arguments"} & set(span.attributes)
    assert tool.kind == "INTERNAL"
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["gen_ai.tool.name"] == "get_weather"
    assert tool.attributes["gen_ai.tool.call.id"] == "r1"
    # The session keeps the latest activation's root.
    assert root2.is_named_by(stored_trace_context(client.database_url, session))


async def test_an_approval_across_a_worker_restart_has_its_own_linked_root(
    traced_worker, model, client, spans, tool_log
):
    model.enqueue(
        reply_tools(("w1", "send_email", {"to": "ana@example.com", "body": "Hi"})),
        reply_text("Sent."),
    )
    async with traced_worker():
        session = await client.start_session("Traced", "Email Ana.")
        await client.wait_for(session, pending_interrupt("w1"))
    root, chat1 = spans(session)
    # RunModel copied the activation's root onto the call's record.
    url = client.database_url
    assert root.is_named_by(stored_record_trace_context(url, session, "w1"))
    assert tool_log.count("send_email") == 0

    async with traced_worker():
        assert await client.resolve_interrupt(session, "w1", approved=True)
        await client.wait_for(session, turns_done(1))

    found = spans(session)
    assert [s.step for s in found] == [
        ("StartAgentSession", "invoke_agent Traced"),
        ("RunModel", "chat scripted-model"),
        ("AwaitToolApproval", "invoke_agent Traced"),
        ("CallSingleAttemptTool", "execute_tool send_email"),
        ("RunModel", "chat scripted-model"),
    ]
    approval, tool, chat2 = found[2:]
    assert approval.parent_id is None and approval.trace_id != root.trace_id
    assert approval.links == ((root.trace_id, root.span_id),)
    assert (chat1.trace_id, chat1.parent_id) == (root.trace_id, root.span_id)
    # The tool and the model call after it join the approval's root, not the first one.
    for child in (tool, chat2):
        assert (child.trace_id, child.parent_id) == (approval.trace_id, approval.span_id)
        check_common(child, session)
    assert tool.attributes["gen_ai.tool.call.id"] == "w1"
    assert tool_log.count("send_email") == 1
    assert approval.is_named_by(stored_trace_context(url, session))


async def test_a_retried_model_call_has_a_span_per_attempt(traced_worker, model, client, spans):
    model.enqueue(ScriptedReply(status=500), reply_text("Recovered."))
    async with traced_worker():
        session = await client.start_session("Traced", "Hello")
        await client.wait_for(session, turns_done(1))

    root, failed, retried = spans(session)
    assert failed.step == ("RunModel", "chat")
    assert retried.step == ("RunModel", "chat scripted-model")
    same_step = failed.attributes["dex.step.execution_id"]
    assert retried.attributes["dex.step.execution_id"] == same_step
    assert (failed.attributes["dex.step.attempt"], retried.attributes["dex.step.attempt"]) == (1, 2)
    # The failed attempt reported no model call: INTERNAL, no usage, an error.
    assert failed.kind == "INTERNAL" and failed.error
    assert failed.attributes["error.type"] == "RuntimeError"
    assert "gen_ai.usage.input_tokens" not in failed.attributes
    assert retried.kind == "CLIENT" and not retried.error
    for span in (failed, retried):
        assert (span.trace_id, span.parent_id) == (root.trace_id, root.span_id)
        assert span.end <= retried.end


async def test_compaction_emits_the_summary_call_under_the_turns_root(
    traced_worker, model, client, spans, tool_log
):
    model.enqueue(*(reply_text(f"answer {n}") for n in range(1, 4)))
    async with traced_worker():
        session = await client.start_session("Compacting", "question 1")
        for n in (2, 3):
            await client.wait_for(session, turns_done(n - 1))
            assert await client.send_user_message(session, f"question {n}")
        await client.wait_for(session, turns_done(3))
    assert tool_log.count("summarize") == 1

    found = spans(session)
    root = found[-4]
    assert [s.step for s in found[-4:]] == [
        ("AwaitUserMessage", "invoke_agent Compacting"),
        ("RunModel", "chat"),
        ("CompactContext", "chat summary-model"),
        ("RunModel", "chat scripted-model"),
    ]
    decided, summary, answer = found[-3:]
    for span in (decided, summary, answer):
        assert (span.trace_id, span.parent_id) == (root.trace_id, root.span_id)
        check_common(span, session)
    # The RunModel attempt that only decided to compact made no model call.
    assert decided.kind == "INTERNAL" and "gen_ai.usage.input_tokens" not in decided.attributes
    assert summary.kind == "CLIENT"
    assert summary.attributes["gen_ai.response.model"] == "summary-model-1"
    assert summary.attributes["gen_ai.response.id"] == "summary-1"
    assert summary.attributes["gen_ai.usage.input_tokens"] == 7
    assert summary.attributes["gen_ai.usage.output_tokens"] == 3
    assert summary.attributes["dex.input.messages.first_sequence"] == 1


class BrokenProcessor(SpanProcessor):
    """An exporter pipeline that fails on every span."""

    def on_end(self, span: ReadableSpan) -> None:
        raise RuntimeError("the collector is on fire")


async def test_a_failing_tracing_pipeline_fails_and_retries_no_step(
    monkeypatch, model, client, database_url, tool_log, caplog
):
    monkeypatch.setenv(MODEL_URL_ENV, model.base_url)
    monkeypatch.setattr(app, "LOG", tool_log)
    broken = TracerProvider()
    broken.add_span_processor(BrokenProcessor())
    model.enqueue(reply_tools(("r1", "get_weather", {"city": "Lima"})), reply_text("Sunny."))
    async with Worker(app.flows, database_url=database_url, tracing=broken):
        session = await client.start_session("Traced", "Weather in Lima?")
        await client.wait_for(session, turns_done(1))

    history = await client.get_step_history(session)
    assert [(s.step_type, s.status, s.attempts) for s in history[:-1]] == [
        ("StartAgentSession", "succeeded", 1),
        ("RunModel", "succeeded", 1),
        ("CallTool", "succeeded", 1),
        ("ResumeTurn", "succeeded", 1),
        ("RunModel", "succeeded", 1),
    ]
    # The Worker stopped cleanly: it parked the wait, or stopped before the wait's workflow
    # began, which leaves it waiting for the next Worker.
    assert (history[-1].step_type, history[-1].attempts) == ("AwaitUserMessage", 0)
    assert history[-1].status in ("parked", "waiting")
    assert tool_log.count("get_weather") == 1
    skipped = [r.getMessage() for r in caplog.records if r.name == "dex_agents.otel"]
    assert any(m.startswith("tracing: skipped the invoke_agent span") for m in skipped)
    assert any(m.startswith("tracing: skipped the span of RunModel") for m in skipped)


async def test_content_is_captured_only_when_asked(
    traced_worker, monkeypatch, model, client, spans
):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    model.enqueue(reply_tools(("r1", "get_weather", {"city": "Lima"})), reply_text("Sunny."))
    async with traced_worker():
        session = await client.start_session("Traced", "Weather in Lima?")
        await client.wait_for(session, turns_done(1))

    _, chat1, tool, chat2 = spans(session)
    assert json.loads(chat1.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "Weather in Lima?"}]}
    ]
    assert json.loads(chat1.attributes["gen_ai.output.messages"]) == [
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "id": "r1",
                    "name": "get_weather",
                    "arguments": '{"city": "Lima"}',
                }
            ],
        }
    ]
    assert json.loads(chat2.attributes["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "Sunny."}]}
    ]
    assert tool.attributes["gen_ai.tool.call.arguments"] == '{"city": "Lima"}'
    assert json.loads(tool.attributes["gen_ai.tool.call.result"]) == {
        "city": "Lima",
        "forecast": "sunny",
    }


async def test_the_stored_root_follows_the_sampling_decision(
    monkeypatch, model, client, database_url, exporter
):
    monkeypatch.setenv(MODEL_URL_ENV, model.base_url)
    model.enqueue(reply_text("one"), reply_text("two"))
    unsampled = TracerProvider(sampler=ALWAYS_OFF)
    unsampled.add_span_processor(SimpleSpanProcessor(exporter))
    async with Worker(app.flows, database_url=database_url, tracing=unsampled):
        session = await client.start_session("Traced", "Hello")
        await client.wait_for(session, turns_done(1))
    # Not sampled, yet valid: stored, so the activation's spans share the decision.
    stored = stored_trace_context(database_url, session)
    assert stored is not None and stored.startswith("00-")
    assert int(stored.rsplit("-", 1)[1], 16) & 1 == 0  # the sampled flag is off
    assert exporter.get_finished_spans() == ()

    # A tracer whose root has no valid context (the API's no-op) deletes the stored value.
    async with Worker(app.flows, database_url=database_url, tracing=NoOpTracerProvider()):
        assert await client.send_user_message(session, "Again")
        await client.wait_for(session, turns_done(2))
    assert stored_trace_context(database_url, session) is None


async def test_a_start_without_a_message_is_an_activation_of_its_own(
    traced_worker, model, client, spans
):
    model.enqueue(reply_text("Hi."))
    async with traced_worker():
        session = await client.start_session("Traced")
        await client.wait_for(session, lambda s: s.state is not None)
        assert await client.send_user_message(session, "Hello")
        await client.wait_for(session, turns_done(1))

    start, turn, chat = spans(session)
    assert [s.step for s in (start, turn, chat)] == [
        ("StartAgentSession", "invoke_agent Traced"),
        ("AwaitUserMessage", "invoke_agent Traced"),
        ("RunModel", "chat scripted-model"),
    ]
    assert "dex.agent.turn.id" not in start.attributes  # no turn yet
    assert turn.links == ((start.trace_id, start.span_id),)
    assert (chat.trace_id, chat.parent_id) == (turn.trace_id, turn.span_id)


async def test_a_polled_task_has_a_tool_span_per_poll(
    monkeypatch, model, client, database_url, tool_log, tmp_path, spans, provider
):
    tasks = tmp_path / "tasks.json"
    monkeypatch.setenv(MODEL_URL_ENV, model.base_url)
    monkeypatch.setattr(tasks_app, "LOG", tool_log)
    monkeypatch.setattr(tasks_app, "TASKS", tasks)
    model.enqueue(reply_tools(("t1", "start_job", {"name": "build"})), reply_text("Built."))
    async with Worker(tasks_app.flows, database_url=database_url, tracing=provider):
        session = await client.start_session("Tasks", "Build it")
        await client.wait_for(
            session, lambda s: any(c.status == "waiting_for_task" for c in s.tool_calls)
        )
        tasks.write_text(json.dumps({"job-build": "done"}))
        await client.wait_for(session, turns_done(1))

    found = spans(session)
    root = found[0]
    tools = [s for s in found if s.name == "execute_tool start_job"]
    assert [s.attributes["dex.step.type"] for s in tools] == ["CallTool"] + ["PollToolTask"] * (
        tool_log.count("poll")
    )
    assert tool_log.count("poll") >= 1
    for span in tools:
        assert (span.trace_id, span.parent_id) == (root.trace_id, root.span_id)
        assert span.attributes["gen_ai.tool.call.id"] == "t1"
        check_common(span, session)
