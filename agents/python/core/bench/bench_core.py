"""Engine overhead of the session Flow, measured with an instant model and instant tools.

    cd agents/python/core && uv run python bench/bench_core.py [--postgres URL] [--turns N]

Prints, for SQLite (and Postgres when a URL is given):
- per-Step overhead (scheduled -> committed) of RunModel and CallTool: median and p95;
- per-turn overhead of RunModel -> CallTool -> ResumeTurn -> RunModel;
- turns per second with 1 and with 20 concurrent sessions on one Worker;
- the same turn in a session holding 10 messages and one holding 10,000.
The Flow is instant_app.py's, which bench_scale.py runs in Worker processes.
Nothing here is a test: it prints figures for the README.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import sqlalchemy as sa
from instant_app import FLOW

from dex_agents import AgentClient, Worker, db
from dex_agents.clock import parse_time


class TurnWatcher:
    """Wakes the bench when a session's turn count moves, from the Worker's own commits,
    so waiting costs no polling that would compete with the engine."""

    def __init__(self, worker: Worker, client: AgentClient) -> None:
        assert worker.runtime is not None
        self.database = worker.runtime.database
        self.client = client
        self.changed: dict[str, asyncio.Event] = {}
        worker.runtime.waker.add_listener(self._notify)

    def _notify(self, sessions: set[str]) -> None:
        for session in sessions:
            event = self.changed.get(session)
            if event is not None:
                event.set()

    async def turn_count(self, session: str) -> int:
        def read(conn: sa.Connection) -> int:
            text = conn.execute(
                sa.select(db.sessions.c.state).where(db.sessions.c.session_id == session)
            ).scalar_one()
            state = json.loads(text) if text else {}
            done = state.get("turn_count", -1) if state.get("active_turn_id") is None else -1
            return int(done)

        return await self.database.read(read)

    async def wait_turns(self, session: str, turns: int) -> None:
        event = self.changed.setdefault(session, asyncio.Event())
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            event.clear()
            if await self.turn_count(session) >= turns:
                return
            # Turn ends write events, which wake; a session's start does not, so look again
            # now and then (a tight poll per session would load the engine it measures).
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), timeout=0.5)
        raise TimeoutError(f"session {session} did not finish turn {turns}")

    async def run_turns(self, session: str, turns: int, start: int) -> None:
        for n in range(start + 1, start + turns + 1):
            await self.client.send_user_message(session, f"turn {n}")
            await self.wait_turns(session, n)


class Meter:
    """Wall time and this process's CPU time (Worker, client and bench together) of a block."""

    def __enter__(self) -> Meter:
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *_: object) -> None:
        self.wall = time.perf_counter() - self._wall
        self.cpu = time.process_time() - self._cpu

    def report(self, turns: int) -> str:
        return (
            f"{turns / self.wall:6.1f} turns/s   {self.wall / turns * 1000:5.1f} ms per turn   "
            f"CPU {self.cpu / turns * 1000:5.1f} ms per turn"
        )


def seconds(start: str | None, end: str | None) -> float:
    assert start and end
    return (parse_time(end) - parse_time(start)).total_seconds()


async def step_figures(client: AgentClient, session: str) -> dict[str, list[float]]:
    history = await client.get_step_history(session)
    per_type: dict[str, list[float]] = {"RunModel": [], "CallTool": [], "turn": []}
    for step in history:
        if step.step_type in ("RunModel", "CallTool"):
            per_type[step.step_type].append(seconds(step.scheduled_at, step.ended_at))
    # A turn: from the first RunModel's scheduling to the second RunModel's commit.
    run_models = [s for s in history if s.step_type == "RunModel"]
    for first, second in zip(run_models[::2], run_models[1::2], strict=False):
        per_type["turn"].append(seconds(first.scheduled_at, second.ended_at))
    return per_type


def describe(values: Sequence[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"median {statistics.median(ordered) * 1000:6.1f} ms   p95 {p95 * 1000:6.1f} ms"


async def grow_history(url: str, session: str, messages: int) -> None:
    """Stores `messages` more messages in one go, as a long-running session would hold."""
    engine = db.create_engine(url)
    with engine.begin() as conn:
        state_text = conn.execute(
            sa.select(db.sessions.c.state).where(db.sessions.c.session_id == session)
        ).scalar_one()
        state = json.loads(state_text)
        first = state["next_message_sequence"]
        rows = [
            {
                "session_id": session,
                "sequence": first + i,
                "turn_id": "turn-0",
                "role": "user" if i % 2 == 0 else "assistant",
                "text": f"message {i}",
                "framework_item": json.dumps(f"message {i}"),
                "created_at": "2026-01-01T00:00:00.000Z",
            }
            for i in range(messages)
        ]
        conn.execute(db.messages.insert(), rows)
        state["next_message_sequence"] = first + messages
        conn.execute(
            db.sessions.update()
            .where(db.sessions.c.session_id == session)
            .values(state=json.dumps(state))
        )
    engine.dispose()


async def bench(url: str, turns: int) -> None:
    worker = Worker([FLOW], database_url=url)
    await worker.__aenter__()  # returns once the Worker takes Steps
    client = AgentClient(url)
    watcher = TurnWatcher(worker, client)
    # The client commits in this process too: wake the Worker directly, as an application
    # that embeds its Worker does, instead of through the wake-up poll.
    assert worker.runtime is not None
    client._db().on_wake = worker.runtime.waker.notify_threadsafe
    try:
        session = await client.start_session("Bench")
        await watcher.wait_turns(session, 0)
        await watcher.run_turns(session, 5, 0)  # warm-up
        with Meter() as single:
            await watcher.run_turns(session, turns, 5)
        figures = await step_figures(client, session)
        print(f"  RunModel step     {describe(figures['RunModel'][10:])}")
        print(f"  CallTool step     {describe(figures['CallTool'][5:])}")
        print(f"  turn (4 Steps)    {describe(figures['turn'][5:])}")
        print(f"  1 session         {single.report(turns)}")

        sessions = [await client.start_session("Bench") for _ in range(20)]
        for s in sessions:
            await watcher.wait_turns(s, 0)
        per_session = max(turns // 4, 5)
        with Meter() as many:
            await asyncio.gather(*(watcher.run_turns(s, per_session, 0) for s in sessions))
        concurrent = [t for s in sessions for t in (await step_figures(client, s))["turn"]]
        print(f"  20 sessions       {many.report(20 * per_session)}")
        growth = many.wall / (20 * per_session) / (single.wall / turns)
        print(f"  per-turn cost, 20 sessions vs 1: {growth:.2f}x")
        print(f"  turn latency, 20 sessions        {describe(concurrent)}")

        small = await client.start_session("Bench")
        await watcher.run_turns(small, 3, 0)
        big = await client.start_session("Bench")
        await watcher.run_turns(big, 1, 0)
        await grow_history(client.database_url, big, 10_000)
        await watcher.run_turns(small, turns, 3)
        await watcher.run_turns(big, turns, 1)
        small_runs = (await step_figures(client, small))["RunModel"][6:]
        big_runs = (await step_figures(client, big))["RunModel"][2:]
        ratio = statistics.median(big_runs) / statistics.median(small_runs)
        print(f"  RunModel, 10 msgs     {describe(small_runs)}")
        print(f"  RunModel, 10,000 msgs {describe(big_runs)}   ({ratio:.2f}x)")
    finally:
        await client.close()
        await worker.__aexit__(None, None, None)
        # The stopped Worker's cancelled workflows finish their bookkeeping before the next
        # Worker of this process starts DBOS again.
        await asyncio.sleep(1.0)


def database_settings(url: str) -> str:
    engine = db.create_engine(url)
    with engine.connect() as conn:
        if db.is_sqlite(url):
            mode = conn.exec_driver_sql("PRAGMA journal_mode").scalar()
            sync = conn.exec_driver_sql("PRAGMA synchronous").scalar()
            names = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
            level = names.get(sync, str(sync)) if isinstance(sync, int) else str(sync)
            text = f"journal_mode={mode} synchronous={level}"
        else:
            fsync = conn.exec_driver_sql("SHOW fsync").scalar()
            commit = conn.exec_driver_sql("SHOW synchronous_commit").scalar()
            text = f"fsync={fsync} synchronous_commit={commit}"
    engine.dispose()
    return text


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--postgres", help="a Postgres URL whose database the bench may fill")
    parser.add_argument("--turns", type=int, default=40)
    args = parser.parse_args()
    targets = [("SQLite", f"sqlite:///{Path(tempfile.mkdtemp()) / 'bench.sqlite'}")]
    if args.postgres:
        targets.append(("Postgres", args.postgres))
    for name, url in targets:
        print(f"{name}: {database_settings(url)}")
        await bench(url, args.turns)


if __name__ == "__main__":
    asyncio.run(main())
