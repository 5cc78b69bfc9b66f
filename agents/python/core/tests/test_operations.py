"""Operations endpoints of real processes: a Worker's /metrics, /livez and /readyz on its
--http-port, `dex-agents serve --metrics`, and JSON log lines.

The metrics are scraped while a turn waits for an approval and after it ended, and must have
moved exactly as the turn's Steps did; readiness must turn false during a database outage
(outages.py) and true again after it, while liveness and the scrape keep answering.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from dex_agents import AgentClient
from dex_agents.testing import ServeProcess, WorkerProcess, reply_text, reply_tools
from dex_agents.testing.scripted_runner import MODEL_URL_ENV

from .helpers import pending_interrupt, turns_done, wait_until
from .outages import Outage, outage_database, postgres_bin


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _endpoint_env(port: int, **extra: str) -> dict[str, str]:
    return {"DEX_AGENTS_HTTP_PORT": str(port), "DEX_AGENTS_METRICS": "1", **extra}


def scrape(
    base_url: str, headers: dict[str, str] | None = None
) -> dict[tuple[str, frozenset], float]:
    """Every sample of /metrics, by name and labels."""
    response = httpx.get(f"{base_url}/metrics", headers=headers, timeout=10.0)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def _no_session_labels(samples: dict) -> None:
    allowed = {"flow_type", "step_type", "outcome", "effect", "status", "state", "le"}
    for _, labels in samples:
        assert {key for key, _ in labels} <= allowed, labels


async def test_a_workers_metrics_move_as_its_steps_do(make_worker, model, client, tool_log):
    port = _free_port()
    # No hot window: the approval's wait parks at once, and the approval wakes it.
    env = _endpoint_env(port, DEX_AGENTS_HOT_WINDOW_SECONDS="0")
    worker = make_worker(**env).start()
    base = f"http://127.0.0.1:{port}"
    assert httpx.get(f"{base}/livez").json()["status"] == "ok"
    ready = httpx.get(f"{base}/readyz")
    assert ready.status_code == 200, ready.text
    assert ready.json()["checks"]["flows"] == "hosts Assistant"

    model.enqueue(reply_tools(("w1", "send_email", {"to": "ana@example.com", "body": "Hi"})))
    session = await client.start_session("Assistant", "Email Ana.")
    await client.wait_for(session, pending_interrupt("w1"))
    assistant = {"flow_type": "Assistant"}
    run_model = {**assistant, "step_type": "RunModel"}
    write = {**assistant, "effect": "non_idempotent_write"}
    ok = {**assistant, "outcome": "ok"}
    wait_until(
        lambda: value(scrape(base), "dex_agents_sessions", **assistant, state="parked") == 1,
        what="the approval's wait to park",
    )
    during = scrape(base)
    assert value(during, "dex_agents_sessions", **assistant, state="waiting_for_person") == 1
    assert value(during, "dex_agents_sessions", **assistant, state="running") == 0
    assert value(during, "dex_agents_steps_started_total", **run_model) == 1
    assert value(during, "dex_agents_model_call_duration_seconds_count", **ok) == 1
    assert value(during, "dex_agents_tool_calls_total", **write, status="succeeded") == 0
    assert value(during, "dex_agents_wake_latency_seconds_count", **assistant) == 0
    assert value(during, "dex_agents_database_up") == 1

    model.enqueue(reply_text("Sent."))
    assert await client.resolve_interrupt(session, "w1", approved=True)
    await client.wait_for(session, turns_done(1))
    after = scrape(base)
    worker.stop()

    assert value(after, "dex_agents_steps_started_total", **run_model) == 2
    assert value(after, "dex_agents_steps_finished_total", outcome="succeeded", **run_model) == 2
    assert value(after, "dex_agents_step_duration_seconds_count", **run_model) == 2
    assert value(after, "dex_agents_model_call_duration_seconds_count", **ok) == 2
    assert value(after, "dex_agents_tool_calls_total", **write, status="succeeded") == 1
    assert value(after, "dex_agents_tool_calls_outcome_unknown_total", **write) == 0
    assert value(after, "dex_agents_step_retries_total", **run_model) == 0
    assert value(after, "dex_agents_wake_latency_seconds_count", **assistant) >= 1
    assert value(after, "dex_agents_sessions", **assistant, state="waiting_for_person") == 0
    assert ("dex_agents_queue_depth", frozenset(assistant.items())) in after
    assert tool_log.count("send_email") == 1
    _no_session_labels(after)


@pytest.fixture(params=["sqlite"] + (["postgres"] if postgres_bin() else []))
def outage_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Outage]]:
    """A database of this test's own and a way to take it away."""
    with outage_database(request.param, tmp_path) as database:
        yield database


def _ready(base: str) -> int:
    return httpx.get(f"{base}/readyz", timeout=10.0).status_code


def test_readiness_turns_false_during_a_database_outage_and_back_after(
    outage_backend, model, worker_target, worker_cwd, tmp_path
):
    url, outage = outage_backend
    # A stopped Postgres refuses connections at once, so the Worker's next transaction counts
    # the outage; a SQLite write waits out its 30 s busy timeout first (the outage tests of
    # test_database_outage.py hold the lock longer), so there only readiness is looked at.
    counted = url.startswith("postgresql")
    port = _free_port()
    # A short lease: the Worker's heartbeat writes meet a SQLite lock within a second.
    env = _endpoint_env(
        port, DEX_AGENTS_WORKER_LEASE_SECONDS="3", **{MODEL_URL_ENV: model.base_url}
    )
    worker = WorkerProcess(
        worker_target, database_url=url, env=env, cwd=worker_cwd, log_path=tmp_path / "worker.log"
    )
    worker.start()
    try:
        base = f"http://127.0.0.1:{port}"
        wait_until(lambda: _ready(base) == 200, what="the Worker to be ready")
        with outage():
            wait_until(lambda: _ready(base) == 503, timeout=30, what="readiness to turn false")
            body = httpx.get(f"{base}/readyz", timeout=10.0).json()
            assert body["status"] == "unavailable"
            assert httpx.get(f"{base}/livez", timeout=10.0).status_code == 200
            assert value(scrape(base), "dex_agents_database_up") in (0, 1)  # it answers
            if counted:
                wait_until(
                    lambda: value(scrape(base), "dex_agents_database_outage_active") == 1,
                    timeout=30,
                    what="the outage to be counted",
                )
        wait_until(lambda: _ready(base) == 200, timeout=60, what="readiness to return")
        # A scrape made during the outage left a read waiting for the lock; a scrape reports
        # the database down while that read has not answered, so the gauge follows readiness.
        wait_until(
            lambda: value(scrape(base), "dex_agents_database_up") == 1,
            timeout=30,
            what="the metrics to read the database again",
        )
        samples = scrape(base)
        assert value(samples, "dex_agents_database_up") == 1
        if counted:
            wait_until(
                lambda: (
                    value(scrape(base), "dex_agents_database_outage_duration_seconds_count") >= 1
                ),
                timeout=30,
                what="the outage's length",
            )
            assert value(scrape(base), "dex_agents_database_outages_total") == 1
            assert value(scrape(base), "dex_agents_database_outage_active") == 0
        worker.stop()
    finally:
        worker.kill()


async def test_a_failing_tool_is_retried_and_logged_as_json_with_its_ids(
    make_worker, model, client, tool_log
):
    if not client.database_url.startswith("sqlite"):
        pytest.skip("the log format does not depend on the database: SQLite covers it")
    port = _free_port()
    worker = make_worker(**_endpoint_env(port, DEX_AGENTS_LOG_FORMAT="json")).start()
    model.enqueue(reply_tools(("b1", "broken_tool", {})), reply_text("The tool is broken."))
    session = await client.start_session("Assistant", "Use the broken tool.")
    await client.wait_for(session, turns_done(1))
    samples = scrape(f"http://127.0.0.1:{port}")
    worker.stop()

    labels = {"flow_type": "Assistant", "step_type": "CallTool"}
    assert tool_log.count("broken_tool") == 3  # a read: three attempts
    assert value(samples, "dex_agents_step_attempt_failures_total", **labels) == 3
    assert value(samples, "dex_agents_step_retries_total", **labels) == 2
    assert value(samples, "dex_agents_steps_finished_total", outcome="failed", **labels) == 1
    status = {"flow_type": "Assistant", "effect": "read", "status": "failed"}
    assert value(samples, "dex_agents_tool_calls_total", **status) == 1

    lines = [json.loads(line) for line in worker.log().splitlines() if line.startswith("{")]
    assert lines and all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    failed = [line for line in lines if "attempt 1 failed" in line["message"]]
    assert len(failed) == 1, lines
    assert failed[0]["level"] == "warning"
    assert failed[0]["session_id"] == session
    assert failed[0]["step_execution_id"] in failed[0]["message"]
    snapshot = await client.get_agent_snapshot(session)
    assert failed[0]["turn_id"] == snapshot.messages[0].turn_id
    assert "traceback" not in failed[0]
    assert "Traceback" not in worker.log()


async def test_serve_answers_health_and_metrics_behind_its_token(database_url):
    async with AgentClient(database_url) as agent_client:
        await agent_client.connect(create=True)
        await agent_client.start_session("Assistant", "Nobody hosts me yet.")
    with ServeProcess(database_url, args=["--metrics"]) as server:
        base = server.base_url
        assert httpx.get(f"{base}/livez").json()["status"] == "ok"
        ready = httpx.get(f"{base}/readyz")
        assert ready.status_code == 200 and ready.json()["checks"]["database"] == "ok"
        assert httpx.get(f"{base}/metrics").status_code == 401
        samples = scrape(base, server.headers)
    assert value(samples, "dex_agents_database_up") == 1
    # The session's first Step waits in its flow type's queue for a Worker.
    assert value(samples, "dex_agents_queue_depth", flow_type="Assistant") == 1
    _no_session_labels(samples)
