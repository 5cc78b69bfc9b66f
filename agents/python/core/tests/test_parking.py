"""Parked sessions through real Worker processes: a waiting Step leaves its Worker after the
hot window (0 here: it parks at its first look), the commit that may satisfy it wakes it on
a Worker of its flow type, a due time wakes it on any such Worker, a restart recovers only
what runs, and messages or approvals committed while Steps park are each handled once."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

from dex_agents import AgentClient
from dex_agents.testing import reply_text, reply_tools

from .helpers import events_of, pending_interrupt, step_workflows, turns_done

HOT_0 = {"DEX_AGENTS_HOT_WINDOW_SECONDS": "0"}
PLANNER = "tests.apps.planning:flows"
# A workflow status that holds a Worker: a coroutine that waits, or one queued for one.
HELD = {"PENDING", "ENQUEUED"}


def _steps(database_url: str, session: str) -> dict[str, tuple[str, int]]:
    """Each Step execution's status and wake number, as its row holds them."""
    engine = sa.create_engine(database_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text(
                    "SELECT step_execution_id, status, wakes FROM dex_steps "
                    "WHERE session_id = :s ORDER BY seq"
                ),
                {"s": session},
            ).all()
    finally:
        engine.dispose()
    return {row[0]: (row[1], row[2]) for row in rows}


async def _parked(database_url: str, session: str, *steps: str, timeout: float = 20) -> None:
    """Waits until these Step executions of the session are parked."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        rows = await asyncio.to_thread(_steps, database_url, session)
        if all(rows.get(step, ("", 0))[0] == "parked" for step in steps):
            return
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"{steps} of {session} did not park: {rows}")
        await asyncio.sleep(0.05)


def _held(database_url: str, session: str) -> dict[str, str]:
    return {w: s for w, s in step_workflows(database_url, session).items() if s in HELD}


def _executor(database_url: str, where: str, value: str) -> str | None:
    """The executor of the latest-ended Step workflow whose ID matches (`where`: SQL)."""
    engine = sa.create_engine(database_url)
    table = "dbos.workflow_status" if database_url.startswith("postgresql") else "workflow_status"
    try:
        with engine.connect() as conn:
            return conn.execute(
                sa.text(
                    f"SELECT executor_id FROM {table} WHERE {where} "
                    "ORDER BY updated_at DESC LIMIT 1"
                ),
                {"w": value},
            ).scalar()
    finally:
        engine.dispose()


def _executor_of(database_url: str, workflow_id: str) -> str | None:
    return _executor(database_url, "workflow_uuid = :w", workflow_id)


def _last_executor(database_url: str, session: str) -> str | None:
    """The Worker of the session's Step workflow that ended last."""
    return _executor(database_url, "workflow_uuid LIKE :w", f"{session}/%")


async def test_a_waiting_session_parks_holds_no_workflow_and_a_message_wakes_it(
    make_worker, model, client, database_url
):
    model.enqueue(reply_text("Hello."), reply_text("Again."))
    with make_worker(**HOT_0):
        session = await client.start_session("Assistant", "Hi")
        await client.wait_for(session, turns_done(1))
        await _parked(database_url, session, "AwaitUserMessage-3")
        # The park commits before the workflow's end is recorded: its workflow ends next.
        await _until(lambda: _held(database_url, session) == {})
        history = {s.step_execution_id: s.status for s in await client.get_step_history(session)}
        assert history["AwaitUserMessage-3"] == "parked"

        assert await client.send_user_message(session, "Again?")
        await client.wait_for(session, turns_done(2))
        await _parked(database_url, session, "AwaitUserMessage-5")
    steps = _steps(database_url, session)
    assert steps["AwaitUserMessage-3"] == ("succeeded", 1)
    assert steps["RunModel-4"] == ("succeeded", 0)
    assert step_workflows(database_url, session)[f"{session}/AwaitUserMessage-3#1"] == "SUCCESS"
    assert [m["content"] for m in model.requests[1].body["messages"] if m["role"] == "user"] == [
        "Hi",
        "Again?",
    ]


async def test_an_approval_parked_across_a_kill_wakes_on_another_worker_and_writes_once(
    make_worker, model, client, database_url, tool_log
):
    model.enqueue(
        reply_tools(("w1", "send_email", {"to": "ana@example.com", "body": "Hi"})),
        reply_text("Sent."),
    )
    first = make_worker(**HOT_0).start()
    session = await client.start_session("Assistant", "Email Ana")
    await client.wait_for(session, pending_interrupt("w1"))
    await _parked(database_url, session, "AwaitToolApproval-3", "ResumeTurn-4")
    await _until(lambda: _held(database_url, session) == {})
    first.kill()
    second = make_worker(**HOT_0).start()
    # The new Worker recovered nothing of this session: it waits in its rows alone.
    assert _held(database_url, session) == {}
    assert await client.resolve_interrupt(session, "w1", approved=True)
    await client.wait_for(session, turns_done(1))
    second.stop()

    assert tool_log.count("send_email") == 1
    steps = _steps(database_url, session)
    assert steps["AwaitToolApproval-3"] == ("succeeded", 1)
    wake = f"{session}/AwaitToolApproval-3#1"
    assert _executor_of(database_url, wake) == second.worker_id


async def test_a_durable_wait_fires_on_a_worker_that_did_not_park_it(
    make_worker, model, client, database_url
):
    model.enqueue(
        reply_tools(("w1", "durable_wait", {"seconds": 2, "reason": "let the build finish"})),
        reply_text("Waited."),
    )
    first = make_worker(PLANNER, **HOT_0).start()
    session = await client.start_session("Planner", "Wait a bit")
    snapshot = await client.wait_for(
        session, lambda s: any(c.status == "waiting_for_timer" for c in s.tool_calls)
    )
    wait_until = snapshot.tool_calls[0].wait_until
    timer = next(s for s in _steps(database_url, session) if s.startswith("AwaitTimer"))
    await _parked(database_url, session, timer)
    first.kill()
    second = make_worker(PLANNER, **HOT_0).start()
    await client.wait_for(session, turns_done(1), timeout=30)
    second.stop()

    assert _steps(database_url, session)[timer] == ("succeeded", 1)
    assert _executor_of(database_url, f"{session}/{timer}#1") == second.worker_id
    fired = await events_of(client, session, "tool_call_finished")
    assert [e["tool_call_id"] for e in fired] == ["w1"]
    assert snapshot.tool_calls[0].wait_until == wait_until


async def test_a_park_with_a_due_time_wakes_a_running_worker_that_did_not_park_it(
    make_worker, model, client, database_url
):
    """Both Workers run before the session starts, so the one that did not park the timer read
    no due time at its start: its due-time loop learns of the timer from the park's wake-up
    (its periodic look is an hour apart here) and fires it once the parking Worker is gone."""
    model.enqueue(
        reply_tools(("w1", "durable_wait", {"seconds": 3, "reason": "let the build finish"})),
        reply_text("Waited."),
    )
    env = {**HOT_0, "DUE_RESCAN_SECONDS": "3600"}
    workers = [make_worker(PLANNER, **env).start(), make_worker(PLANNER, **env).start()]
    session = await client.start_session("Planner", "Wait a bit")
    await client.wait_for(
        session, lambda s: any(c.status == "waiting_for_timer" for c in s.tool_calls)
    )
    timer = next(s for s in _steps(database_url, session) if s.startswith("AwaitTimer"))
    await _parked(database_url, session, timer)
    await _until(lambda: _held(database_url, session) == {})
    # The workflow that parked the timer (it drove it, often inline after earlier Steps) is
    # the session's last to end.
    parker = _last_executor(database_url, session)
    (other,) = [w for w in workers if w.worker_id != parker]
    for worker in workers:
        if worker is not other:
            worker.kill()
    await client.wait_for(session, turns_done(1), timeout=30)
    other.stop()

    assert _steps(database_url, session)[timer] == ("succeeded", 1)
    assert _executor_of(database_url, f"{session}/{timer}#1") == other.worker_id


async def test_an_approval_deadline_wakes_a_parked_approval(
    make_worker, model, client, database_url, tool_log
):
    model.enqueue(
        reply_tools(("w1", "send_email", {"to": "ana@example.com", "body": "Hi"})),
        reply_text("It was not approved in time."),
    )
    with make_worker(**HOT_0, APPROVAL_DEADLINE_SECONDS="1"):
        session = await client.start_session("Assistant", "Email Ana")
        await client.wait_for(session, turns_done(1), timeout=30)
    assert tool_log.count("send_email") == 0
    assert _steps(database_url, session)["AwaitToolApproval-3"] == ("succeeded", 1)
    resolved = await events_of(client, session, "interrupt_resolved")
    assert [r["approved"] for r in resolved] == [False]


async def test_a_restarted_worker_recovers_what_runs_and_leaves_parked_sessions_parked(
    make_worker, model, client, database_url
):
    sessions_count = 8
    model.enqueue(*(reply_text(f"Answer {i}.") for i in range(sessions_count)))
    worker = make_worker(**HOT_0).start()
    sessions = [await client.start_session("Assistant", f"Hi {i}") for i in range(sessions_count)]
    for session in sessions:
        await client.wait_for(session, turns_done(1))
        await _parked(database_url, session, "AwaitUserMessage-3")
    before = {s: step_workflows(database_url, s) for s in sessions}
    worker.kill()
    worker.start()  # the same Worker ID: DBOS recovers every workflow it left unfinished
    for session in sessions:
        assert step_workflows(database_url, session) == before[session]
        assert _steps(database_url, session)["AwaitUserMessage-3"] == ("parked", 0)
    model.enqueue(reply_text("Woken."))
    assert await client.send_user_message(sessions[3], "Still there?")
    await client.wait_for(sessions[3], turns_done(2))
    worker.stop()
    assert _steps(database_url, sessions[3])["AwaitUserMessage-3"] == ("succeeded", 1)


async def _turns(client: AgentClient, session: str, count: int) -> None:
    """Sends each next message the moment the previous turn's outcome commits, when its
    AwaitUserMessage is about to park, parking, or parked."""
    for turn in range(2, count + 2):
        await client.send_user_message(session, f"message {turn} of {session}")
        await client.wait_for(session, turns_done(turn), timeout=60)


async def test_messages_and_approvals_committed_while_steps_park_are_each_handled_once(
    make_worker, model, client, database_url, tool_log
):
    """Hot window 0: every wait parks at its first look, so each message and approval below
    races its Step's park; none may be lost or handled twice."""
    sessions_count, turns = 3, 8
    model.enqueue(*(reply_text("ok") for _ in range(sessions_count * (turns + 1))))
    with make_worker(**HOT_0):
        sessions = [await client.start_session("Assistant", "start") for _ in range(sessions_count)]
        for session in sessions:
            await client.wait_for(session, turns_done(1))
        await asyncio.gather(*(_turns(client, s, turns) for s in sessions))

        approvals = 4
        for i in range(approvals):
            call = f"e{i}"
            model.enqueue(
                reply_tools((call, "send_email", {"to": "ana@example.com", "body": str(i)})),
                reply_text("Sent."),
            )
            await client.send_user_message(sessions[0], f"email {i}")
            await client.wait_for(sessions[0], pending_interrupt(call))
            # At once: the approval's Step is checking, parking or parked.
            assert await client.resolve_interrupt(sessions[0], call, approved=True)
            await client.wait_for(sessions[0], turns_done(turns + 2 + i), timeout=60)

    for session in sessions:
        snapshot = await client.get_agent_snapshot(session)
        assert snapshot.state is not None
        expected = turns + 1 + (approvals if session == sessions[0] else 0)
        assert snapshot.state.turn_count == expected
        completed = await events_of(client, session, "turn_completed")
        assert len(completed) == expected
        # Each Step ended or parked: none was left to a Worker that stopped.
        statuses = {status for status, _ in _steps(database_url, session).values()}
        assert statuses <= {"succeeded", "parked"}, _steps(database_url, session)
    assert tool_log.count("send_email") == approvals
    sent = [
        m["content"]
        for r in model.requests
        for m in r.body["messages"][-1:]
        if m["role"] == "user" and str(m["content"]).startswith("message")
    ]
    # Each message reached the model once, as the last message of one request.
    assert len(sent) == len(set(sent)) == sessions_count * turns


async def test_kills_during_parks_wakes_and_claims_lose_and_repeat_nothing(
    make_worker, model, client, database_url, tool_log
):
    """SIGKILLs at random moments while messages wake parked Steps and Steps park: every
    message is answered once, and no Step workflow is left failed."""
    turns, kills = 10, 5
    # A model call cut off by a kill runs again and takes the next scripted reply.
    model.enqueue(*(reply_text(f"answer {i}") for i in range(turns + 1 + kills)))
    worker = make_worker(**HOT_0).start()
    session = await client.start_session("Assistant", "start")
    await client.wait_for(session, turns_done(1), timeout=60)
    rng = random.Random(20261206)
    kill_at = sorted(rng.sample(range(2, turns + 2), kills))

    async def kill_soon(delay: float) -> None:
        await asyncio.sleep(delay)
        await asyncio.to_thread(worker.restart)

    pending: list[asyncio.Task[Any]] = []
    for turn in range(2, turns + 2):
        await client.send_user_message(session, f"message {turn}")
        if turn in kill_at:
            pending.append(asyncio.create_task(kill_soon(rng.uniform(0.0, 0.05))))
        await client.wait_for(session, turns_done(turn), timeout=90)
        await asyncio.gather(*pending)
        pending.clear()
    worker.stop()

    ends = [e.type for e in await client.read_events(session) if e.type.startswith("turn_")]
    assert ends.count("turn_completed") == turns + 1, ends
    assert ends.count("turn_started") == turns + 1, ends
    users = [
        m["content"]
        for r in model.requests
        for m in r.body["messages"][-1:]
        if m["role"] == "user" and str(m["content"]).startswith("message")
    ]
    assert sorted(set(users)) == sorted(f"message {t}" for t in range(2, turns + 2))
    statuses = step_workflows(database_url, session)
    assert not {"ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"} & set(statuses.values())


async def test_the_hot_window_keeps_an_active_chat_in_memory(
    make_worker, model, client, database_url
):
    model.enqueue(reply_text("Hello."), reply_text("Again."))
    with make_worker(DEX_AGENTS_HOT_WINDOW_SECONDS="30") as worker:
        session = await client.start_session("Assistant", "Hi")
        await client.wait_for(session, turns_done(1))
        await asyncio.sleep(0.5)
        assert _steps(database_url, session)["AwaitUserMessage-3"] == ("waiting", 0)
        assert set(_held(database_url, session).values()) == {"PENDING"}
        # A clean stop parks what waits: the next Worker drives nothing of it.
        worker.stop()
    assert _steps(database_url, session)["AwaitUserMessage-3"] == ("parked", 0)
    with make_worker(**HOT_0):
        await _until(lambda: _held(database_url, session) == {})
    assert _steps(database_url, session)["AwaitUserMessage-3"] == ("parked", 0)


async def _until(condition: Callable[[], bool], timeout: float = 20) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await asyncio.to_thread(condition):
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def test_a_step_that_waited_in_a_workflow_when_its_worker_died_parks_once_recovered(
    make_worker, model, client, database_url
):
    """As a session waits after an upgrade from a release without parking: its Step's
    workflow is PENDING on a Worker that is gone; the Worker that recovers it parks it."""
    model.enqueue(reply_text("Hello."), reply_text("Again."))
    worker = make_worker(DEX_AGENTS_HOT_WINDOW_SECONDS="600").start()
    session = await client.start_session("Assistant", "Hi")
    await client.wait_for(session, turns_done(1))
    worker.kill()
    assert set(_held(database_url, session).values()) == {"PENDING"}
    assert _steps(database_url, session)["AwaitUserMessage-3"] == ("waiting", 0)
    worker.env.update(HOT_0)
    worker.start()
    await _parked(database_url, session, "AwaitUserMessage-3")
    await _until(lambda: _held(database_url, session) == {})
    assert await client.send_user_message(session, "Again?")
    await client.wait_for(session, turns_done(2))
    worker.stop()
    assert _steps(database_url, session)["AwaitUserMessage-3"] == ("succeeded", 1)


def test_the_dbos_seam_enqueues_a_wake_as_the_step_workflow_expects_it(database_url):
    """The one DBOS call parking makes (`DBOSClient.enqueue_in_transaction`, through
    `StepEnqueuer`): a DBOS upgrade that changed what it writes fails here, by name."""
    from dbos import DBOS, DBOSClient

    from dex_agents.db import Database, create_dbos_engine
    from dex_agents.routing import DRIVER_VERSION, STEP_WORKFLOW, step_queue_name

    database = Database(database_url)
    database.create_schema()
    DBOS.migrate(database.url)
    try:
        database.write_sync(
            lambda conn: database.enqueuer.enqueue(
                conn, "Assistant", "s-1", "AwaitUserMessage-3", 2
            )
        )
        client = DBOSClient(system_database_engine=create_dbos_engine(database.url))
        try:
            [status] = client.list_workflows(workflow_ids=["s-1/AwaitUserMessage-3#2"])
        finally:
            client.destroy()
    finally:
        database.close()
    assert (status.status, status.name, status.queue_name, status.app_version) == (
        "ENQUEUED",
        STEP_WORKFLOW,
        step_queue_name("Assistant"),
        DRIVER_VERSION,
    )
    assert list(status.input["args"]) == ["s-1", "AwaitUserMessage-3", 2]
