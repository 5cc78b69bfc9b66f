"""Sessions move from a busy Worker to a less busy one when a turn begins: a Worker that
started while another ran every session takes its share of the next turns, each model call
still runs once, and a lone Worker hands nothing over."""

from __future__ import annotations

import asyncio

from dbos import DBOSClient

from dex_agents import AgentClient
from dex_agents.db import create_dbos_engine
from dex_agents.testing import reply_text

from .helpers import no_failed_workflows, turns_done, wait_until

SESSIONS = 8
# A loaded machine may need several turns to hand sessions over (see below).
MAX_TURNS = 10
FAST_BALANCE = {"DEX_AGENTS_BALANCE_SECONDS": "0.2"}


def executors(database_url: str, session_id: str) -> dict[str, str]:
    """The Worker that ran each Step workflow of a session, by workflow ID."""
    dbos_client = DBOSClient(system_database_engine=create_dbos_engine(database_url))
    try:
        found = dbos_client.list_workflows(
            workflow_id_prefix=f"{session_id}/", load_input=False, load_output=False
        )
        return {w.workflow_id: w.executor_id or "" for w in found}
    finally:
        dbos_client.destroy()


async def next_turn(client: AgentClient, sessions: list[str], turn: int) -> None:
    for session in sessions:
        assert await client.send_user_message(session, f"turn {turn}")
    await asyncio.gather(*(client.wait_for(s, turns_done(turn), timeout=60) for s in sessions))


async def test_a_worker_that_joins_takes_turns_over_from_the_busy_one(
    make_worker, model, client, database_url
):
    model.enqueue(*(reply_text(f"answer {n}") for n in range(SESSIONS * MAX_TURNS)))
    with make_worker(DEX_AGENTS_WORKER_ID="worker-a", **FAST_BALANCE) as worker_a:
        sessions = [await client.start_session("Assistant", "turn 1") for _ in range(SESSIONS)]
        await asyncio.gather(*(client.wait_for(s, turns_done(1)) for s in sessions))
        await next_turn(client, sessions, 2)
        # Alone, the Worker hands nothing over: each session is still its first workflow.
        for session in sessions:
            assert set(executors(database_url, session).values()) == {"worker-a"}
            assert len(executors(database_url, session)) == 1

        with make_worker(DEX_AGENTS_WORKER_ID="worker-b", **FAST_BALANCE):
            # worker-a's balancer has seen worker-b's liveness row (it logs what it sees).
            wait_until(lambda: "Assistant: worker-b" in worker_a.log(), what="worker-b seen")
            # A loaded machine may let worker-a's own queue poll claim back a session it
            # handed over before worker-b does: later turns hand over again.
            turns = 2
            while turns < MAX_TURNS:
                turns += 1
                await next_turn(client, sessions, turns)
                moved = [s for s in sessions if "worker-b" in executors(database_url, s).values()]
                if len(moved) >= 2:
                    break

    # 8 sessions on worker-a, none on worker-b: it hands sessions over until the difference
    # is at most two, and they go to worker-b, the less busy.
    assert 2 <= len(moved) <= 5, moved
    assert len(model.requests) == SESSIONS * turns  # every model call ran exactly once
    for session in sessions:
        history = await client.get_step_history(session)
        assert [s.step_type for s in history].count("RunModel") == turns
        assert {s.attempts for s in history if s.step_type == "RunModel"} == {1}
        assert no_failed_workflows(database_url, session)
