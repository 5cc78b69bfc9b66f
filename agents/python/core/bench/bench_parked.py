"""Parked Steps: what N idle sessions cost a Worker, on SQLite and Postgres.

    cd agents/python/core/bench && uv sync --locked
    uv run python bench_parked.py [--sessions 1000,10000,100000] [--databases sqlite,postgres]
        [--postgres URL] [--seed 200] [--samples 200] [--idle-seconds 20] [--restarts 3]
        [--lone-samples K] [--hot-counts 0,25,100] [--share-sessions 1000] [--json PATH]

A session waiting for its next message keeps its AwaitUserMessage Step in its Worker's memory
for the hot window (10 s by default), then parks it in its row (`dex_steps.status = 'parked'`)
and its DBOS workflow ends; the commit of the next message wakes it through the flow type's
queue, on any Worker of the flow type. This bench measures what that leaves of N idle
sessions in a Worker, each Worker a real process (`dex-agents worker echo_app:flows`, the
Echo-like Flow of echo_app.py: one model Step that answers at once, no tool, so every figure
is the engine's, DBOS's and the database's). For each database kind and each N, on a fresh
database (a SQLite file in a temporary directory, or a database created on the Postgres server
at URL and dropped after the run):

1. An empty Worker: RSS (psutil, of the Worker process and its children) after it is ready and
   a few seconds settled, and its CPU time while idle over --idle-seconds; then --restarts
   SIGKILLs and restarts (the floor of every restart: starting the process), and it stops.
2. N parked sessions. `--seed` sessions (default 200) run for real: each started with a first
   message and answered by a Worker whose hot window is 0, so each parks its AwaitUserMessage
   Step at once; the bench waits until every one is parked and no DBOS workflow is left
   ENQUEUED or PENDING, and stops that Worker. The rest are clones of those rows: every dex_*
   row of a seed session (dex_sessions, dex_messages, dex_tool_calls, dex_channel_messages,
   dex_events, dex_steps) copied by set-based SQL (INSERT ... SELECT over a table of copy
   numbers) under the session ID with a suffix `-c<k>`. The DBOS `workflow_status` rows are
   not cloned: a parked session has no live workflow. (A real session also leaves one finished
   workflow row per wake, which DBOS's recovery and queues, selecting PENDING and ENQUEUED rows
   through indexes on status, pass over; that table grows with turns, parked or not, and is
   not measured here.) Creating 100,000 sessions through
   real turns would take far too long here; a Worker's cost cannot depend on how a parked row
   got there, and the bench checks the clones behave: it wakes --verify of them (default 20)
   with a message each, and each must answer.
3. A new Worker (the default hot window) on those N parked sessions: start -> ready, RSS after
   it settled, idle CPU over --idle-seconds (and, on Postgres, the CPU of the server backends
   connected to the run's database meanwhile, when the server runs on this host).
4. SIGKILL of that Worker's process group, then the same Worker ID started again: kill ->
   ready (the Worker's READY_FILE), then ready -> first turn answered on a parked session that
   was never woken (the message sent once the Worker is ready, the answer seen by this
   client); --restarts times, the median reported.
5. Wake latency, --samples turns (default 200) on parked sessions (distinct clones never woken)
   and as many on a hot session (one the Worker answered less than a hot window before),
   interleaved in a random order, one turn at a time. Two figures per turn: the time from
   the return of the message's commit (`send_user_message_for_turn`) to the Worker's
   turn_started and turn_completed events (their `created_at`, written by the Worker on this
   host's clock, 1 ms resolution), and the time until this client saw the turn's outcome
   (`wait_for_turn`, woken by the commit). p50 and p99 of each, parked minus hot. Also the
   time the send itself took (a parked session's wake is enqueued in that commit), and how
   many workflows the Worker ran at each parked send (each session woken in the last hot
   window holds one; a Worker waits 1 ms per workflow it runs beyond the least busy other
   Worker of the flow type, up to 50 ms, before it claims a queued one: dequeue.py). With
   --lone-samples K, K more parked wakes, each after a hot window of nothing; with
   --hot-counts, parked wakes while K other sessions are hot.
6. RSS of the Worker again after those turns and a hot window, when the woken sessions have
   parked again.

Then, on Postgres, two Workers: --share-sessions parked sessions (default 1,000) are each woken
by one message, once one turn at a time and once --share-concurrency turns in flight; for each
turn, the Worker that ran it is the DBOS executor of its wake workflow
(`<session>/<step>#<wake>`, whose run takes the message and answers it in one workflow).

Prints the figures and their ratios to the targets: at 100,000 sessions at most 50 MB of RSS
over an empty Worker, at most 1% of a core idle, at most 2 s from restart to the first turn;
a parked wake at most 20 ms (p50) and 100 ms (p99) over a hot one; each of two Workers 40-60%
of the turns. Nothing here is a test: it prints figures for bench/README.md ("Parked
sessions"). The machine's load average is printed with every run: on a shared machine,
figures of time are upper bounds.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import contextlib
import datetime
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import sqlalchemy as sa
from bench_scale import Backends, create_database, drop_database, percentile
from echo_app import FLOW_TYPE

import dex_agents
from dex_agents import AgentClient, db, dbos_internals
from dex_agents.clock import parse_time
from dex_agents.parking import DEFAULT_HOT_WINDOW_SECONDS, HOT_WINDOW_ENV
from dex_agents.routing import STEP_WORKFLOW
from dex_agents.testing import WorkerProcess
from dex_agents.worker import WORKER_ID_ENV

HERE = Path(__file__).resolve().parent
TURN_TIMEOUT = 120.0
SETTLE_SECONDS = 5.0
# Every dex_* table that holds rows of a session (dex_wakeups and dex_workers do not).
SESSION_TABLES = (
    db.sessions,
    db.messages,
    db.tool_calls,
    db.channel_messages,
    db.events,
    db.steps,
)
# Sessions cloned per transaction, so a long clone shows its progress.
CLONE_ROWS_PER_BATCH = 20_000

TARGETS = {
    "rss_mb_over_empty": 50.0,
    "idle_cpu_percent": 1.0,
    "restart_to_first_turn_s": 2.0,
    "wake_p50_ms_over_hot": 20.0,
    "wake_p99_ms_over_hot": 100.0,
}
SHARE_TARGET_PERCENT = (40.0, 60.0)


def say(text: str) -> None:
    print(text, flush=True)


# -- databases ----------------------------------------------------------------------------------


@dataclass
class Run:
    """One fresh database and the Worker processes started on it."""

    kind: str
    url: str
    server_url: str | None
    logs: Path
    workers: list[WorkerProcess] = field(default_factory=list)

    def worker(self, name: str, hot_window: float | None = None) -> WorkerProcess:
        env = {WORKER_ID_ENV: name}
        if hot_window is not None:
            env[HOT_WINDOW_ENV] = str(hot_window)
        proc = WorkerProcess(
            "echo_app:flows",
            database_url=self.url,
            env=env,
            cwd=HERE,
            log_path=self.logs / f"{name}.log",
            start_timeout=900.0,
        )
        self.workers.append(proc)
        return proc


@contextlib.contextmanager
def fresh_database(kind: str, server_url: str | None) -> Iterator[Run]:
    logs = Path(tempfile.mkdtemp(prefix="dex-bench-parked-"))
    if kind == "sqlite":
        run = Run(kind, "sqlite:///" + str(logs / "bench.sqlite"), None, logs)
    else:
        assert server_url is not None
        run = Run(kind, create_database(server_url), server_url, logs)
    try:
        yield run
    except BaseException:
        for proc in run.workers:
            say(f"--- log of {proc.worker_id} ({proc.log_path}):\n{proc.log()[-4000:]}")
        raise
    finally:
        for proc in run.workers:
            proc.kill()
        if run.server_url is not None:
            with contextlib.suppress(Exception):
                drop_database(run.server_url, run.url)
        shutil.rmtree(logs, ignore_errors=True)


def scalar(url: str, sql: str) -> Any:
    engine = db.create_engine(url, pool_size=1)
    try:
        with engine.connect() as conn:
            return conn.exec_driver_sql(sql).scalar()
    finally:
        engine.dispose()


def workflow_table(kind: str) -> str:
    return "dbos.workflow_status" if kind == "postgres" else "workflow_status"


# -- a Worker's cost ----------------------------------------------------------------------------


def processes(proc: WorkerProcess) -> list[psutil.Process]:
    assert proc.process is not None
    root = psutil.Process(proc.process.pid)
    return [root, *root.children(recursive=True)]


def rss_mb(proc: WorkerProcess) -> float:
    total = 0
    for p in processes(proc):
        with contextlib.suppress(psutil.NoSuchProcess):
            total += p.memory_info().rss
    return total / 2**20


def cpu_seconds(proc: WorkerProcess) -> float:
    total = 0.0
    for p in processes(proc):
        with contextlib.suppress(psutil.NoSuchProcess):
            t = p.cpu_times()
            total += t.user + t.system
    return total


async def idle_cost(run: Run, proc: WorkerProcess, seconds: float) -> dict[str, Any]:
    """RSS once settled, then the Worker's CPU (and its database's, on a local Postgres)
    over `seconds` of nothing to do."""
    await asyncio.sleep(SETTLE_SECONDS)
    settled = rss_mb(proc)
    backends = Backends(run.url) if run.kind == "postgres" else None
    try:
        backends0 = backends.cpu() if backends else {}
        cpu0, wall0 = cpu_seconds(proc), time.perf_counter()
        await asyncio.sleep(seconds)
        cpu1, wall1 = cpu_seconds(proc), time.perf_counter()
        backends1 = backends.cpu() if backends else {}
    finally:
        if backends:
            backends.close()
    wall = wall1 - wall0
    result: dict[str, Any] = {
        "rss_mb_settled": settled,
        "rss_mb": rss_mb(proc),
        "idle_cpu_percent": (cpu1 - cpu0) / wall * 100,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    if backends is not None and backends.local:
        used = sum(cpu - backends0.get(pid, 0.0) for pid, cpu in backends1.items())
        result["postgres_idle_cpu_percent"] = used / wall * 100
    return result


async def start(proc: WorkerProcess) -> float:
    """Starts the Worker; returns the seconds until it was ready."""
    began = time.perf_counter()
    await asyncio.to_thread(proc.start)
    return time.perf_counter() - began


# -- parked sessions ----------------------------------------------------------------------------


async def seed_sessions(run: Run, client: AgentClient, count: int) -> list[str]:
    """`count` sessions, each answered once for real and parked by a Worker of hot window 0."""
    seeder = run.worker("bench-seeder", hot_window=0)
    await start(seeder)
    ids = [f"parked-{i:05d}" for i in range(count)]
    gate = asyncio.Semaphore(16)

    async def one(session_id: str) -> None:
        async with gate:
            result = await client.start_session_and_wait(
                FLOW_TYPE, "hello", session_id=session_id, timeout=TURN_TIMEOUT
            )
            if result.status != "completed":
                raise RuntimeError(f"seed {session_id}: turn {result.status}: {result.error}")

    await asyncio.gather(*(one(s) for s in ids))
    deadline = time.monotonic() + 60
    while (parked := count_parked(run.url)) < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {parked} of {count} seed sessions parked within 60 s")
        await asyncio.sleep(0.2)
    await asyncio.to_thread(seeder.stop)
    live = scalar(
        run.url,
        f"select count(*) from {workflow_table(run.kind)} where status in ('ENQUEUED', 'PENDING')",
    )
    if live:
        raise RuntimeError(f"{live} DBOS workflows still ENQUEUED or PENDING after seeding")
    return ids


def count_parked(url: str) -> int:
    return int(scalar(url, "select count(*) from dex_steps where status = 'parked'"))


def clone_sessions(run: Run, seeds: Sequence[str], copies: int) -> float:
    """Copies every dex_* row of the seed sessions `copies` times, the k-th copy under the
    session ID + `-c<k>`; returns the seconds it took."""
    began = time.perf_counter()
    engine = db.create_engine(run.url, pool_size=1)
    numbers = sa.Table("bench_copy_numbers", sa.MetaData(), sa.Column("k", sa.Integer))
    per_batch = max(1, CLONE_ROWS_PER_BATCH // len(seeds))
    try:
        with engine.begin() as conn:
            numbers.create(conn)
        for first in range(1, copies + 1, per_batch):
            last = min(copies, first + per_batch - 1)
            with engine.begin() as conn:
                conn.execute(numbers.delete())
                conn.execute(numbers.insert(), [{"k": k} for k in range(first, last + 1)])
                for table in SESSION_TABLES:
                    conn.execute(clone_rows(table, numbers, seeds))
            done = last * len(seeds) + len(seeds)
            say(f"    cloned: {done:,} sessions ({time.perf_counter() - began:.1f} s)")
        with engine.begin() as conn:
            numbers.drop(conn)
            if run.kind == "postgres":
                conn.exec_driver_sql("ANALYZE")
    finally:
        engine.dispose()
    return time.perf_counter() - began


def clone_rows(table: sa.Table, numbers: sa.Table, seeds: Sequence[str]) -> sa.Insert:
    # Every column but dex_channel_messages' own key, which the insert numbers.
    columns = [c for c in table.c if c.name != "id"]
    suffix = sa.literal("-c") + sa.cast(numbers.c.k, sa.String)
    values = [(c + suffix).label("session_id") if c.name == "session_id" else c for c in columns]
    query = (
        sa.select(*values)
        .select_from(table.join(numbers, sa.true()))
        .where(table.c.session_id.in_(list(seeds)))
    )
    return table.insert().from_select([c.name for c in columns], query)


# -- turns --------------------------------------------------------------------------------------


@dataclass
class Turn:
    send_ms: float
    started_ms: float
    completed_ms: float
    seen_ms: float
    text: str | None
    status: str


async def timed_turn(client: AgentClient, session_id: str, turn_number: int) -> Turn:
    """One turn; times from the return of the message's commit."""
    began = time.perf_counter()
    queued = await client.send_user_message_for_turn(session_id, f"ping {turn_number}")
    sent_wall, sent = time.time(), time.perf_counter()
    assert queued is not None
    turn_id = f"turn-{turn_number}"
    result = await client.wait_for_turn(
        session_id, turn_id, after=queued.event_offset, timeout=TURN_TIMEOUT
    )
    seen = time.perf_counter()
    events = await client.read_events(session_id, after=queued.event_offset)
    times = {e.type: parse_time(e.created_at).timestamp() for e in events if e.turn_id == turn_id}
    return Turn(
        send_ms=(sent - began) * 1000,
        started_ms=(times.get("turn_started", float("nan")) - sent_wall) * 1000,
        completed_ms=(times.get("turn_completed", float("nan")) - sent_wall) * 1000,
        seen_ms=(seen - sent) * 1000,
        text=result.text,
        status=result.status,
    )


def check_answered(session_id: str, turn: Turn) -> None:
    if turn.status != "completed" or turn.text != "echo":
        raise RuntimeError(f"{session_id}: turn {turn.status}, answer {turn.text!r}")


def distribution(values: Sequence[float]) -> dict[str, float]:
    return {"p50": statistics.median(values), "p99": percentile(list(values), 0.99)}


async def wake_latency(
    client: AgentClient, run: Run, parked: Sequence[str], samples: int
) -> dict[str, Any]:
    """`samples` turns on parked sessions and as many on one hot session, interleaved; for
    each parked one, how many workflows the Worker ran when it was sent (each hot session
    holds one, and a Worker waits 1 ms per workflow it runs, up to 50 ms, before it claims a
    queued one: dequeue.py's claim delay)."""
    hot = f"hot-{uuid.uuid4().hex[:8]}"
    first = await client.start_session_and_wait(FLOW_TYPE, "hello", session_id=hot)
    check_answered(hot, Turn(0, 0, 0, 0, first.text, first.status))
    hot_turns = 1
    turns: dict[str, list[Turn]] = {"parked": [], "hot": []}
    running: list[int] = []
    order = [kind for _ in range(samples) for kind in random.sample(["parked", "hot"], 2)]
    parked_iter = iter(parked)
    for i, kind in enumerate(order):
        if kind == "hot":
            hot_turns += 1
            session, number = hot, hot_turns
        else:
            session, number = next(parked_iter), 2
        if kind == "parked":
            running.append(await asyncio.to_thread(live_workflows, run))
        turn = await timed_turn(client, session, number)
        check_answered(session, turn)
        turns[kind].append(turn)
        if (i + 1) % 100 == 0:
            say(f"    wake latency: {i + 1} of {len(order)} turns")
    result: dict[str, Any] = {}
    for measure in ("send_ms", "started_ms", "completed_ms", "seen_ms"):
        by_kind = {k: distribution([getattr(t, measure) for t in ts]) for k, ts in turns.items()}
        by_kind["parked_over_hot"] = {
            q: by_kind["parked"][q] - by_kind["hot"][q] for q in ("p50", "p99")
        }
        result[measure] = by_kind
    result["workflows_running_at_parked_send"] = distribution([float(n) for n in running])
    by_delay: dict[str, list[float]] = {}
    for n, turn in zip(running, turns["parked"], strict=True):
        by_delay.setdefault(claim_bucket(n), []).append(turn.completed_ms)
    result["parked_completed_ms_by_workflows_running"] = {
        bucket: {**distribution(values), "turns": len(values)}
        for bucket, values in sorted(by_delay.items())
    }
    return result


def claim_bucket(workflows: int) -> str:
    for low, high in ((0, 4), (5, 19), (20, 49)):
        if low <= workflows <= high:
            return f"{low:02d}-{high}"
    return "50+"


def live_workflows(run: Run) -> int:
    return int(
        scalar(run.url, f"select count(*) from {workflow_table(run.kind)} where status = 'PENDING'")
    )


async def lone_wakes(client: AgentClient, parked: Sequence[str]) -> dict[str, float]:
    """Turns on parked sessions while nothing else is hot: each after a hot window and more
    of nothing, so the Worker runs no workflow when the message comes."""
    completed = []
    for i, session in enumerate(parked):
        await asyncio.sleep(DEFAULT_HOT_WINDOW_SECONDS + 1.0)
        turn = await timed_turn(client, session, 2)
        check_answered(session, turn)
        completed.append(turn.completed_ms)
        say(f"    lone parked wake {i + 1} of {len(parked)}: {turn.completed_ms:.1f} ms")
    return distribution(completed)


async def wakes_by_hot_count(
    client: AgentClient, run: Run, unused: Iterator[str], counts: Sequence[int], samples: int
) -> dict[str, dict[str, float]]:
    """Parked wakes while K other sessions are hot, for each K: after a hot window (every
    session parked), K parked sessions woken at once (each then holds a workflow on the
    Worker for a hot window), then `samples` parked wakes, one at a time."""
    result = {}
    for count in counts:
        await asyncio.sleep(DEFAULT_HOT_WINDOW_SECONDS + 1.0)
        others = [next(unused) for _ in range(count)]
        answered = await asyncio.gather(*(timed_turn(client, s, 2) for s in others))
        for session, turn in zip(others, answered, strict=True):
            check_answered(session, turn)
        running = await asyncio.to_thread(live_workflows, run)
        completed = []
        for _ in range(samples):
            session = next(unused)
            turn = await timed_turn(client, session, 2)
            check_answered(session, turn)
            completed.append(turn.completed_ms)
        d = result[str(count)] = {**distribution(completed), "workflows_running": running}
        say(
            f"    {count:3d} other sessions hot ({running} workflows running): parked sent -> "
            f"turn_completed p50 {d['p50']:.1f} ms, p99 {d['p99']:.1f} ms"
        )
    return result


# -- one run: N parked sessions on one Worker ----------------------------------------------------


async def one_worker_run(
    kind: str, server_url: str | None, sessions: int, args: argparse.Namespace
) -> dict[str, Any]:
    seed = min(args.seed, sessions)
    if sessions % seed:
        raise SystemExit(f"--seed {seed} must divide the number of sessions {sessions}")
    with fresh_database(kind, server_url) as run:
        result: dict[str, Any] = {"database": kind, "sessions": sessions, "seed": seed}
        say(f"\n== {kind}, {sessions:,} parked sessions")

        empty = run.worker("bench-empty")
        result["empty_start_s"] = await start(empty)
        result["empty"] = await idle_cost(run, empty, args.idle_seconds)
        restarts = []
        for _ in range(args.restarts):
            began = time.perf_counter()
            await asyncio.to_thread(empty.kill)
            await start(empty)
            restarts.append(time.perf_counter() - began)
        result["empty_kill_to_ready_s"] = restarts
        await asyncio.to_thread(empty.stop)
        say(
            f"  empty Worker: ready in {result['empty_start_s']:.2f} s, "
            f"RSS {result['empty']['rss_mb']:.1f} MB, "
            f"idle CPU {result['empty']['idle_cpu_percent']:.2f}% of a core; SIGKILL -> ready "
            + ", ".join(f"{t:.2f}" for t in restarts)
            + " s"
        )

        client = AgentClient(run.url)
        try:
            began = time.perf_counter()
            seeds = await seed_sessions(run, client, seed)
            result["seed_s"] = time.perf_counter() - began
            say(f"  {seed} real sessions answered and parked in {result['seed_s']:.1f} s")
            result["clone_s"] = await asyncio.to_thread(
                clone_sessions, run, seeds, sessions // seed - 1
            )
            parked = count_parked(run.url)
            if parked != sessions:
                raise RuntimeError(f"{parked} parked Steps, expected {sessions}")
            say(f"  {parked:,} parked sessions ({result['clone_s']:.1f} s of cloning)")

            clones = [f"{s}-c{k}" for k in range(1, sessions // seed) for s in seeds]
            random.shuffle(clones)
            unused = iter(clones or seeds)

            worker = run.worker("bench-worker")
            result["start_s"] = await start(worker)
            result["parked"] = await idle_cost(run, worker, args.idle_seconds)
            show_idle(result)

            # SIGKILL, the same Worker ID again, then a turn on a session parked all along.
            result["restarts"] = []
            for _ in range(args.restarts):
                began = time.perf_counter()
                await asyncio.to_thread(worker.kill)
                await start(worker)
                ready = time.perf_counter()
                first = await timed_turn(client, next(unused), 2)
                check_answered("first turn after restart", first)
                answered = time.perf_counter()
                r = {
                    "kill_to_ready_s": ready - began,
                    "ready_to_first_turn_s": answered - ready,
                    "kill_to_first_turn_s": answered - began,
                }
                result["restarts"].append(r)
                say(
                    f"  SIGKILL -> ready {r['kill_to_ready_s']:.2f} s, ready -> first turn "
                    f"answered {r['ready_to_first_turn_s'] * 1000:.0f} ms; total "
                    f"{r['kill_to_first_turn_s']:.2f} s"
                )
            result["restart"] = {
                key: statistics.median(r[key] for r in result["restarts"])
                for key in result["restarts"][0]
            }

            verify = [next(unused) for _ in range(min(args.verify, len(clones) - 1))]
            for session_id in verify:
                check_answered(session_id, await timed_turn(client, session_id, 2))
            result["clones_verified"] = len(verify)
            say(f"  {len(verify)} woken clones each answered")

            samples = min(args.samples, len(clones) - len(verify) - 1)
            result["latency"] = await wake_latency(
                client, run, [next(unused) for _ in range(samples)], samples
            )
            result["latency_samples"] = samples
            show_latency(result["latency"], samples)

            if args.lone_samples:
                lone = [next(unused) for _ in range(args.lone_samples)]
                result["lone_parked_completed_ms"] = await lone_wakes(client, lone)
                d = result["lone_parked_completed_ms"]
                say(
                    f"  lone parked wakes, sent -> turn_completed: p50 {d['p50']:.1f} ms, "
                    f"p99 {d['p99']:.1f} ms"
                )

            if args.hot_counts:
                say(f"  parked wakes ({args.hot_count_samples} each) by other sessions hot:")
                counts = [int(n) for n in args.hot_counts.split(",")]
                result["parked_completed_ms_by_hot_count"] = await wakes_by_hot_count(
                    client, run, unused, counts, args.hot_count_samples
                )

            # Every session woken above parks again after the hot window.
            await asyncio.sleep(DEFAULT_HOT_WINDOW_SECONDS + 2.0)
            result["rss_mb_after_wakes"] = rss_mb(worker)
            result["parked_after_wakes"] = count_parked(run.url)
            say(
                f"  after those turns and a hot window: RSS {result['rss_mb_after_wakes']:.1f} "
                f"MB, {result['parked_after_wakes']:,} parked sessions"
            )
            await asyncio.to_thread(worker.stop)
        finally:
            await client.close()
    result["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return result


def show_idle(result: dict[str, Any]) -> None:
    empty, parked = result["empty"], result["parked"]
    over = parked["rss_mb"] - empty["rss_mb"]
    line = (
        f"  Worker on {result['sessions']:,} parked: ready in {result['start_s']:.2f} s, "
        f"RSS {parked['rss_mb']:.1f} MB ({over:+.1f} MB over empty), idle CPU "
        f"{parked['idle_cpu_percent']:.2f}% of a core"
    )
    if "postgres_idle_cpu_percent" in parked:
        line += (
            f" (Postgres backends {parked['postgres_idle_cpu_percent']:.2f}%, "
            f"empty {empty.get('postgres_idle_cpu_percent', 0.0):.2f}%)"
        )
    say(line + f"; load average {' '.join(f'{x:.2f}' for x in parked['load_average'])}")


def show_latency(latency: dict[str, Any], samples: int) -> None:
    say(f"  wake latency, {samples} turns each, p50 / p99 ms:")
    names = {
        "send_ms": "send (its commit)",
        "started_ms": "sent -> turn_started",
        "completed_ms": "sent -> turn_completed",
        "seen_ms": "sent -> outcome seen",
    }
    for measure, name in names.items():
        d = latency[measure]
        say(
            f"    {name:24s} parked {d['parked']['p50']:6.1f} / {d['parked']['p99']:6.1f}   "
            f"hot {d['hot']['p50']:6.1f} / {d['hot']['p99']:6.1f}   parked - hot "
            f"{d['parked_over_hot']['p50']:+6.1f} / {d['parked_over_hot']['p99']:+6.1f}"
        )
    running = latency["workflows_running_at_parked_send"]
    say(
        f"    workflows the Worker ran when a parked session's message was sent: p50 "
        f"{running['p50']:.0f}, p99 {running['p99']:.0f}; parked sent -> turn_completed by them:"
    )
    for bucket, d in latency["parked_completed_ms_by_workflows_running"].items():
        say(
            f"      {bucket:>5s}: p50 {d['p50']:6.1f} ms, p99 {d['p99']:6.1f} ms "
            f"({d['turns']} turns)"
        )


# -- two Workers on Postgres ---------------------------------------------------------------------


async def share_run(server_url: str, args: argparse.Namespace) -> dict[str, Any]:
    passes = [int(c) for c in args.share_concurrency.split(",")]
    sessions = args.share_sessions * len(passes)
    seed = min(args.seed, args.share_sessions)
    with fresh_database("postgres", server_url) as run:
        say(f"\n== postgres, 2 Workers, {args.share_sessions:,} parked sessions per pass")
        client = AgentClient(run.url)
        try:
            seeds = await seed_sessions(run, client, seed)
            copies = -(-sessions // seed) - 1
            await asyncio.to_thread(clone_sessions, run, seeds, copies)
            every = seeds + [f"{s}-c{k}" for k in range(1, copies + 1) for s in seeds]
            random.shuffle(every)
            procs = [run.worker(f"bench-worker-{i}") for i in (1, 2)]
            await asyncio.gather(*(start(p) for p in procs))
            await asyncio.sleep(SETTLE_SECONDS)
            result: dict[str, Any] = {"sessions_per_pass": args.share_sessions, "passes": {}}
            for n, concurrency in enumerate(passes):
                chosen = every[n * args.share_sessions : (n + 1) * args.share_sessions]
                gate = asyncio.Semaphore(concurrency)

                async def one(session_id: str, gate: asyncio.Semaphore = gate) -> None:
                    async with gate:
                        check_answered(session_id, await timed_turn(client, session_id, 2))

                began = time.perf_counter()
                await asyncio.gather(*(one(s) for s in chosen))
                wall = time.perf_counter() - began
                ran = turns_per_worker(run, chosen)
                share = {w: ran[w] / len(chosen) * 100 for w in sorted(ran)}
                result["passes"][str(concurrency)] = {
                    "turns_per_worker": dict(ran),
                    "share_percent": share,
                    "seconds": wall,
                }
                say(
                    f"  {concurrency} turn(s) in flight: "
                    + ", ".join(f"{w} {ran[w]} ({share[w]:.1f}%)" for w in sorted(ran))
                    + f"; {len(chosen) / wall:.0f} turns/s"
                )
        finally:
            await client.close()
    result["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return result


def turns_per_worker(run: Run, sessions: Sequence[str]) -> Counter[str]:
    """The DBOS executor of each session's wake workflow (the turn's one workflow)."""
    wanted = set(sessions)
    engine = db.create_engine(run.url, pool_size=1)
    try:
        with engine.connect() as conn:
            workflows = dbos_internals.workflow_status(conn)
            rows = conn.execute(
                sa.select(workflows.c.workflow_uuid, workflows.c.executor_id).where(
                    workflows.c.name == STEP_WORKFLOW, workflows.c.workflow_uuid.like("%#%")
                )
            ).all()
    finally:
        engine.dispose()
    ran: Counter[str] = Counter()
    for workflow_id, executor in rows:
        if workflow_id.rpartition("/")[0] in wanted:
            ran[executor] += 1
    missing = len(wanted) - sum(ran.values())
    if missing:
        raise RuntimeError(f"{missing} of {len(wanted)} turns have no wake workflow")
    return ran


# -- the report ---------------------------------------------------------------------------------


def summary(runs: list[dict[str, Any]], share: dict[str, Any] | None) -> None:
    say("\n== Figures against the targets (targets apply at 100,000 sessions)")
    for r in runs:
        over = r["parked"]["rss_mb"] - r["empty"]["rss_mb"]
        lat = r["latency"]["completed_ms"]["parked_over_hot"]
        say(
            f"  {r['database']:8s} {r['sessions']:>7,}: RSS {over:+6.1f} MB over empty "
            f"({over / TARGETS['rss_mb_over_empty']:.2f} of the target), idle CPU "
            f"{r['parked']['idle_cpu_percent']:.2f}% "
            f"({r['parked']['idle_cpu_percent'] / TARGETS['idle_cpu_percent']:.2f}), "
            f"restart -> first turn {r['restart']['kill_to_first_turn_s']:.2f} s "
            f"({r['restart']['kill_to_first_turn_s'] / TARGETS['restart_to_first_turn_s']:.2f}; "
            f"an empty Worker's restart -> ready "
            f"{statistics.median(r['empty_kill_to_ready_s']):.2f} s), "
            f"parked wake over hot {lat['p50']:+.1f} / {lat['p99']:+.1f} ms "
            f"({lat['p50'] / TARGETS['wake_p50_ms_over_hot']:.2f} / "
            f"{lat['p99'] / TARGETS['wake_p99_ms_over_hot']:.2f})"
        )
    if share is not None:
        for concurrency, p in share["passes"].items():
            low, high = SHARE_TARGET_PERCENT
            inside = all(low <= s <= high for s in p["share_percent"].values())
            say(
                f"  2 Workers, {concurrency} in flight: "
                + ", ".join(f"{w} {s:.1f}%" for w, s in p["share_percent"].items())
                + (" (inside 40-60%)" if inside else " (OUTSIDE 40-60%)")
            )


def import_floor() -> float:
    """Seconds for a process that only starts Python and imports what a Worker imports: the
    part of every start and restart that no database work is in. The engine's sources are
    compiled first: where PYTHONDONTWRITEBYTECODE is set, every Worker start would compile
    them again (`uv sync --compile-bytecode` compiles the installed packages, not these)."""
    for source in (Path(dex_agents.__file__).parent, HERE):
        compileall.compile_dir(source, quiet=1)
    began = time.perf_counter()
    code = "import dex_agents.cli, dex_agents.worker, echo_app"
    subprocess.run([sys.executable, "-c", code], cwd=HERE, check=True)
    return time.perf_counter() - began


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    kinds = args.databases.split(",")
    if "postgres" in kinds and not args.postgres:
        raise SystemExit("--postgres URL is needed for the postgres runs")
    result: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}",
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
        "runs": [],
    }
    result["import_floor_s"] = import_floor()
    say(
        f"{result['machine']}; load average {result['load_average_before']}; a process that "
        f"only imports the Worker's modules takes {result['import_floor_s']:.2f} s"
    )
    for sessions in [int(n) for n in args.sessions.split(",")]:
        for kind in kinds:
            result["runs"].append(await one_worker_run(kind, args.postgres, sessions, args))
            if args.json:
                Path(args.json).write_text(json.dumps(result, indent=2))
    share = None
    if "postgres" in kinds and args.share_sessions:
        share = result["two_workers"] = await share_run(args.postgres, args)
    summary(result["runs"], share)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sessions", default="1000,10000", help="comma-separated values of N")
    parser.add_argument("--databases", default="sqlite,postgres", help="sqlite, postgres or both")
    parser.add_argument(
        "--postgres",
        metavar="URL",
        default=os.environ.get("DEX_AGENTS_TEST_POSTGRES_URL"),
        help="a Postgres server on which the bench may create and drop databases "
        "(default: DEX_AGENTS_TEST_POSTGRES_URL)",
    )
    parser.add_argument("--seed", type=int, default=200, help="sessions made by real turns")
    parser.add_argument("--verify", type=int, default=20, help="clones woken to check them")
    parser.add_argument("--samples", type=int, default=200, help="turns of each kind")
    parser.add_argument("--idle-seconds", type=float, default=20.0)
    parser.add_argument(
        "--restarts", type=int, default=3, help="SIGKILL and restarts, of each Worker"
    )
    parser.add_argument(
        "--lone-samples",
        type=int,
        default=0,
        help="parked wakes with nothing else hot, a hot window apart (11 s each)",
    )
    parser.add_argument("--share-sessions", type=int, default=1000, help="0: no 2-Worker run")
    parser.add_argument(
        "--share-concurrency", default="1,32", help="turns in flight, one pass each"
    )
    parser.add_argument(
        "--hot-counts",
        default="",
        help="comma-separated counts of other sessions hot during parked wakes, e.g. 0,25,100",
    )
    parser.add_argument("--hot-count-samples", type=int, default=20)
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()
    if os.environ.get(HOT_WINDOW_ENV):
        sys.exit(f"unset {HOT_WINDOW_ENV}: the measured Workers use the default hot window")
    result = asyncio.run(bench(args))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
