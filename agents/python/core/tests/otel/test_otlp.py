"""The real exporter path: a `dex-agents worker` process with tracing on sends its spans
through the standard OTLP/HTTP exporter, configured by the OTEL_* environment variables, to
a receiver on loopback; an approval waits across a SIGKILL and a restart."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dex_agents.testing import reply_text, reply_tools
from dex_agents.testing.otlp import OtlpReceiver
from dex_agents.testing.sessions import pending_interrupt, turns_done

from .spans import check_common, stored_trace_context

APP = "tests.otel.otlp_app:flows"


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as found:
        yield found


async def test_spans_reach_an_otlp_receiver_across_a_sigkill(
    make_worker, model, client, tool_log, receiver
):
    model.enqueue(
        reply_tools(
            ("r1", "get_weather", {"city": "Lima"}),
            ("w1", "send_email", {"to": "ana@example.com", "body": "Hi"}),
        ),
        reply_text("Sunny, and the email is sent."),
    )
    worker = make_worker(
        APP,
        DEX_AGENTS_TRACING="1",
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
        OTEL_SERVICE_NAME="dex-agents-otlp-test",
        OTEL_BSP_SCHEDULE_DELAY="50",
    ).start()
    session = await client.start_session("Traced", "Weather in Lima, then email Ana.")
    await client.wait_for(session, pending_interrupt("w1"))
    before = receiver.wait_for(3, session)
    # The read's span ends before its Step commits: kill only once it committed, so that the
    # read does not run again.
    await client.wait_for(
        session, lambda s: any(c.tool_call_id == "r1" and c.is_final for c in s.tool_calls)
    )
    worker.kill()  # SIGKILL: the approval outlives the process
    worker.start()
    assert await client.resolve_interrupt(session, "w1", approved=True)
    await client.wait_for(session, turns_done(1))
    found = receiver.wait_for(6, session)
    worker.stop()

    assert found[:3] == before
    assert [s.step for s in found] == [
        ("StartAgentSession", "invoke_agent Traced"),
        ("RunModel", "chat scripted-model"),
        ("CallTool", "execute_tool get_weather"),
        ("AwaitToolApproval", "invoke_agent Traced"),
        ("CallSingleAttemptTool", "execute_tool send_email"),
        ("RunModel", "chat scripted-model"),
    ]
    root, chat1, read, approval, write, chat2 = found
    for span in found:
        check_common(span, session)
        assert not span.error
    assert root.parent_id is None and root.links == ()
    for child in (chat1, read):
        assert (child.trace_id, child.parent_id) == (root.trace_id, root.span_id)
    assert approval.parent_id is None and approval.trace_id != root.trace_id
    assert approval.links == ((root.trace_id, root.span_id),)
    for child in (write, chat2):
        assert (child.trace_id, child.parent_id) == (approval.trace_id, approval.span_id)
    assert (chat1.kind, read.kind, approval.kind) == ("CLIENT", "INTERNAL", "INTERNAL")
    assert chat1.attributes["gen_ai.provider.name"] == "openai"
    assert chat1.attributes["dex.tool_call.ids"] == ["r1", "w1"]
    assert chat1.attributes["gen_ai.usage.output_tokens"] > 0
    assert write.attributes["gen_ai.tool.call.id"] == "w1"
    assert tool_log.count("send_email") == 1
    assert approval.is_named_by(stored_trace_context(client.database_url, session))
    # The exporter's resource and the pinned conventions' schema came along.
    assert {r.get("service.name") for r in receiver.resources} == {"dex-agents-otlp-test"}
    assert receiver.schema_urls == {"https://opentelemetry.io/schemas/1.42.0-dev"}
