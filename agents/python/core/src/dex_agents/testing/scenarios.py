"""Scenarios of the adapters' shared test matrix, run by each adapter's tests against its own
framework: each asserts what a user observes (Step history, events, requests the scripted
model server counted)."""

from __future__ import annotations

from ..client import AgentClient
from .model_server import ScriptedModelServer, ScriptedReply, reply_text


async def check_run_model_owns_retries(
    client: AgentClient,
    model: ScriptedModelServer,
    *,
    flow_type: str,
    flow_type_with_framework_retries: str,
) -> None:
    """The model answers 500s, which an OpenAI client would retry twice by itself: each
    RunModel attempt of `flow_type` must be exactly one request, and a runner made with
    `framework_retries=True` (`flow_type_with_framework_retries`) keeps the client's retries.
    A 400 is not tried again, and a 429's Retry-After is waited for.
    Needs a live Worker hosting both flow types, and a model server no one else uses."""
    before = len(model.requests)

    # Two failures, then an answer: one RunModel Step, three attempts, three requests.
    model.enqueue(ScriptedReply(status=500), ScriptedReply(status=500), reply_text("Hi."))
    recovered = await client.start_session_and_wait(flow_type, "Hello?", timeout=60)
    assert (recovered.status, recovered.text) == ("completed", "Hi.")
    assert len(model.requests) - before == 3

    # Every attempt fails: three requests, then the failure route ends the turn.
    model.enqueue(*[ScriptedReply(status=500, text="overloaded")] * 3)
    failed = await client.start_session_and_wait(flow_type, "Hello again?", timeout=60)
    assert failed.status == "failed" and "overloaded" in (failed.error or "")
    assert len(model.requests) - before == 6

    # The client's own retries, left on: one attempt, two requests.
    model.enqueue(ScriptedReply(status=500), reply_text("Hi there."))
    retried = await client.start_session_and_wait(
        flow_type_with_framework_retries, "Hello?", timeout=60
    )
    assert retried.status == "completed"
    assert len(model.requests) - before == 8

    assert await _run_model_attempts(client, recovered.session_id) == [("succeeded", 3)]
    history = await client.get_step_history(failed.session_id)
    assert [s.step_type for s in history] == [
        "StartAgentSession",
        "RunModel",
        "RecordTurnFailure",
        "AwaitUserMessage",
    ]
    assert (history[1].status, history[1].attempts) == ("failed", 3)
    assert history[1].error is not None and "overloaded" in history[1].error
    snapshot = await client.get_agent_snapshot(failed.session_id)
    assert snapshot.state is not None and snapshot.state.last_turn_error == failed.error
    assert await _run_model_attempts(client, retried.session_id) == [("succeeded", 1)]

    # A client error fails the same way on every attempt: one request, then the failure route.
    model.enqueue(ScriptedReply(status=400, text="unknown parameter: temperatura"))
    refused = await client.start_session_and_wait(flow_type, "Hello?", timeout=60)
    assert refused.status == "failed" and "temperatura" in (refused.error or "")
    assert len(model.requests) - before == 9
    assert await _run_model_attempts(client, refused.session_id) == [("failed", 1)]

    # A rate limit's Retry-After is waited for (the Step's own backoff is 0.5 s).
    model.enqueue(ScriptedReply(status=429, retry_after=2), reply_text("Now."))
    limited = await client.start_session_and_wait(flow_type, "Hello?", timeout=60)
    assert (limited.status, limited.text) == ("completed", "Now.")
    assert len(model.requests) - before == 11
    first, second = model.requests[-2:]
    assert second.received_at - first.received_at >= 2.0
    assert await _run_model_attempts(client, limited.session_id) == [("succeeded", 2)]


async def _run_model_attempts(client: AgentClient, session_id: str) -> list[tuple[str, int]]:
    history = await client.get_step_history(session_id)
    return [(s.status, s.attempts) for s in history if s.step_type == "RunModel"]
