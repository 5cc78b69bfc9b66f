"""A database outage of any length delays sessions; it strands none and loses nothing.

Four sessions stand at four places when the database goes away for longer than any retry
window (a private Postgres server stopped, or an exclusive SQLite lock held): one inside a
model call, one inside a read tool, one inside a single-attempt write, one waiting for an
approval. Set DEX_AGENTS_TEST_OUTAGE_SECONDS for a longer outage (e.g. 300).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from dex_agents import AgentClient, texts
from dex_agents.db import QuietOutageFilter, is_unavailable_text
from dex_agents.testing import ToolRunLog, reply_text, reply_tools
from dex_agents.testing.fixtures import POSTGRES_URL

from .helpers import events_of, no_failed_workflows, pending_interrupt, turns_done, wait_until
from .outages import Outage, outage_database, postgres_bin

OUTAGE_SECONDS = float(os.environ.get("DEX_AGENTS_TEST_OUTAGE_SECONDS", "40"))
TOOL_SECONDS = 6.0
BACKENDS = ["sqlite"] + (["postgres"] if POSTGRES_URL and postgres_bin() else [])


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Outage]]:
    """A database of this test's own and a way to take it away."""
    with outage_database(request.param, tmp_path) as database:
        yield database


@pytest.fixture
def database_url(backend: tuple[str, Outage]) -> str:
    return backend[0]


@pytest.fixture
def outage(backend: tuple[str, Outage]) -> Outage:
    return backend[1]


async def _four_sessions_in_flight(client: AgentClient, model, tool_log: ToolRunLog) -> dict:
    """Starts the four sessions one after the other and returns once each stands where the
    outage should find it."""
    model.enqueue(reply_tools(("w1", "send_email", {"to": "ana@example.com", "body": "Hi"})))
    approval = await client.start_session("Assistant", "Email Ana.")
    await client.wait_for(approval, pending_interrupt("w1"))

    model.enqueue(reply_tools(("r1", "slow_read", {"seconds": TOOL_SECONDS})))
    read = await client.start_session("Assistant", "Read slowly.")
    wait_until(lambda: tool_log.count("slow_read") == 1, what="the read tool to start")

    model.enqueue(reply_tools(("s1", "slow_write", {"seconds": TOOL_SECONDS})))
    write = await client.start_session("Assistant", "Write slowly.")
    wait_until(lambda: tool_log.count("slow_write") == 1, what="the write to start")

    model.enqueue(reply_text("Done.", delay_seconds=TOOL_SECONDS))
    in_model = await client.start_session("Assistant", "Answer slowly.")
    model.wait_for_requests(4)
    return {"approval": approval, "read": read, "write": write, "model": in_model}


async def _write_outcome(client: AgentClient, session: str) -> tuple[str, str | None]:
    """The single-attempt write's recorded status and the output the model was given."""
    (finished,) = await events_of(client, session, "tool_call_finished")
    snapshot = await client.get_agent_snapshot(session)
    (output,) = [
        m.tool_output for m in snapshot.messages if m.tool_call_id == "s1" and m.tool_output
    ]
    return finished["status"], output


def _finished(tool_log: ToolRunLog, name: str) -> int:
    return sum(1 for e in tool_log.entries(name) if e.get("phase") == "finished")


async def test_an_outage_longer_than_any_retry_window_strands_no_session_and_repeats_nothing(
    database_url, outage, make_worker, model, client, tool_log
):
    worker = make_worker().start()
    sessions = await _four_sessions_in_flight(client, model, tool_log)
    model.enqueue(*[reply_text("Done.") for _ in range(3)])
    with outage():
        # Both tools and the model call return while the database is away.
        await asyncio.sleep(OUTAGE_SECONDS)
        assert _finished(tool_log, "slow_read") == _finished(tool_log, "slow_write") == 1
        assert worker.running
    back = time.monotonic()
    for name in ("read", "write", "model"):
        await client.wait_for(sessions[name], turns_done(1), timeout=30)
    caught_up = time.monotonic() - back
    assert await client.resolve_interrupt(sessions["approval"], "w1", approved=True)
    await client.wait_for(sessions["approval"], turns_done(1), timeout=30)
    worker.stop()

    # Nothing ran twice; the write that returned during the outage kept its result.
    assert tool_log.count("slow_read") == tool_log.count("slow_write") == 2  # started, finished
    assert tool_log.count("send_email") == 1
    assert len(model.requests) == 7  # 4 before the outage, 3 after: none repeated
    assert await _write_outcome(client, sessions["write"]) == ("succeeded", "written")
    for session in sessions.values():
        assert no_failed_workflows(database_url, session)
        assert [m.text for m in (await client.get_agent_snapshot(session)).messages][-1] == "Done."
    # The Worker said it once: when the outage began, and when it ended.
    log = worker.log()
    assert log.count("is unavailable") == 1, log
    assert log.count("is available again") == 1, log
    assert "Traceback" not in log, log
    assert caught_up < 20, f"the sessions took {caught_up:.1f} s to finish after the outage"


async def test_a_worker_killed_and_restarted_during_an_outage_recovers_every_session(
    database_url, outage, make_worker, model, client, tool_log
):
    worker = make_worker().start()
    sessions = await _four_sessions_in_flight(client, model, tool_log)
    # The model call is made again, the read runs again; the write that had started is
    # recorded as outcome_unknown and never runs again.
    model.enqueue(*[reply_text("Done.") for _ in range(4)])
    with outage():
        await asyncio.sleep(TOOL_SECONDS + 2)  # the tools returned; nothing could commit
        worker.kill()
        # The new Worker starts while the database is still away, and waits for it.
        restart = threading.Thread(target=worker.start)
        restart.start()
        await asyncio.sleep(3)
        assert worker.running and model.pending == 4  # nothing ran yet
    restart.join(90)
    for name in ("read", "write", "model"):
        await client.wait_for(sessions[name], turns_done(1), timeout=30)
    assert await client.resolve_interrupt(sessions["approval"], "w1", approved=True)
    await client.wait_for(sessions["approval"], turns_done(1), timeout=30)
    worker.stop()

    assert [e["phase"] for e in tool_log.entries("slow_read")] == ["started", "finished"] * 2
    assert [e["phase"] for e in tool_log.entries("slow_write")] == ["started", "finished"]
    assert tool_log.count("send_email") == 1
    assert await _write_outcome(client, sessions["write"]) == (
        "outcome_unknown",
        texts.OUTCOME_UNKNOWN_TEXT,
    )
    for session in sessions.values():
        assert no_failed_workflows(database_url, session)


async def test_a_step_whose_attempt_begin_commit_failed_begins_again_and_runs_once(
    database_url, make_worker, model, client, tool_log
):
    """A trigger refuses every attempt begin, as a database that rejects the commit would;
    the Step waits and tries again, and runs its write once the database accepts it."""
    model.enqueue(
        reply_tools(("w1", "send_email", {"to": "ana@example.com", "body": "Hi"})),
        reply_text("Sent."),
    )
    engine = sa.create_engine(database_url.replace("postgresql://", "postgresql+psycopg://"))
    with make_worker() as worker:
        session = await client.start_session("Assistant", "Email Ana.")
        await client.wait_for(session, pending_interrupt("w1"))
        with engine.begin() as conn:
            for statement in _refuse_begins(database_url):
                conn.execute(sa.text(statement))
        assert await client.resolve_interrupt(session, "w1", approved=True)
        wait_until(lambda: "could not go on" in worker.log(), what="a refused attempt begin")
        assert tool_log.count("send_email") == 0
        with engine.begin() as conn:
            conn.execute(
                sa.text(
                    "DROP TRIGGER dex_refuse_begin ON dex_steps"
                    if not database_url.startswith("sqlite")
                    else "DROP TRIGGER dex_refuse_begin"
                )
            )
        snapshot = await client.wait_for(session, turns_done(1), timeout=90)
    engine.dispose()

    assert tool_log.count("send_email") == 1
    assert [m.text for m in snapshot.messages][-1] == "Sent."
    history = await client.get_step_history(session)
    (write,) = [s for s in history if s.step_type == "CallSingleAttemptTool"]
    assert (write.status, write.attempts) == ("succeeded", 1)
    assert no_failed_workflows(database_url, session)


def _refuse_begins(database_url: str) -> list[str]:
    if database_url.startswith("sqlite"):
        return [
            "CREATE TRIGGER dex_refuse_begin BEFORE UPDATE OF status ON dex_steps "
            "WHEN NEW.status = 'running' BEGIN SELECT RAISE(ABORT, 'begin refused'); END"
        ]
    return [
        "CREATE FUNCTION dex_refuse_begin() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'begin refused'; END $$",
        "CREATE TRIGGER dex_refuse_begin BEFORE UPDATE OF status ON dex_steps FOR EACH ROW "
        "WHEN (NEW.status = 'running') EXECUTE FUNCTION dex_refuse_begin()",
    ]


@pytest.mark.parametrize(
    "said",
    [
        'connection to server at "127.0.0.1", port 5432 failed: Connection refused',
        "FATAL:  the database system is starting up",
        "FATAL:  the database system is not yet accepting connections\n"
        "DETAIL:  Consistent recovery state has not been yet reached.",
        "FATAL:  the database system is shutting down",
        "FATAL:  terminating connection due to administrator command",
        "consuming input failed: server closed the connection unexpectedly",
        "database is locked",
    ],
)
def test_every_phase_of_a_database_restart_reads_as_unavailable_and_dbos_stays_quiet(said):
    # DBOS's scheduler logs each failed poll with its traceback in the message.
    record = logging.LogRecord(
        "dbos", logging.WARNING, __file__, 1, f"Exception polling: {said}", None, None
    )
    assert is_unavailable_text(said)
    assert not QuietOutageFilter().filter(record)


def test_an_error_that_is_not_an_outage_is_still_logged():
    record = logging.LogRecord(
        "dbos", logging.WARNING, __file__, 1, 'relation "x" does not exist', None, None
    )
    assert not is_unavailable_text(record.getMessage())
    assert QuietOutageFilter().filter(record)
