"""Scale-out on Postgres: do Worker processes that share one database share the load?

    cd agents/python/core/bench && uv sync --locked
    uv run python bench_scale.py --postgres URL [--sessions N] [--turns K]
        [--baseline-turns B] [--json PATH]

Three runs, each on a fresh database created on the server at URL (and dropped after it):
1. the baseline: 1 session alone on 1 Worker, B turns (default 50, enough clock ticks of CPU);
2. N concurrent sessions (default 40) on 1 Worker;
3. the same N sessions shared by 2 Workers.
Each Worker is a real process, `dex-agents worker instant_app:flows`, with a Worker ID of its
own; each turn is the engine-only turn of bench_core.py (instant_app.py: an instant model,
one read tool), so what is measured is dex-agents, DBOS and Postgres. This process is the
client: it starts the sessions (after the Workers are up), runs 2 unmeasured warm-up turns in
each, then K turns per session (default 10), each with `AgentClient.run_turn` (which sends the
message and is woken by LISTEN/NOTIFY when the turn's events commit): the sessions
concurrently, each session's turns one after the other.

Prints for each run: turns/s over the measured turns; the median and p95 of the turn latency
the client sees (run_turn's time); CPU time per turn of the client (this process, os.times),
of each Worker and of the Postgres backends serving the run's database (psutil, for a server
on this host; a backend that exits mid-run is not counted); the cores those used and the cores
the whole machine used meanwhile (others' work included), and the load average; and which
Worker ran each session's Steps (DBOS's `workflow_status.executor_id` of the session's Step
workflows, whose IDs are `<session>/<step execution>`). Then the ratio of turns/s and of median
latency, 2 Workers vs 1, and how a turn's cost grows from 1 session to N.

Nothing here is a test: it prints figures for the README.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import os
import platform
import statistics
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import psutil
import sqlalchemy as sa
from instant_app import FLOW_TYPE

from dex_agents import AgentClient, db, dbos_internals
from dex_agents.routing import STEP_WORKFLOW
from dex_agents.testing import WorkerProcess
from dex_agents.worker import WORKER_ID_ENV

HERE = Path(__file__).resolve().parent
WARM_UP_TURNS = 2
TURN_TIMEOUT = 120.0


# -- the database of a run ----------------------------------------------------------------------


def create_database(server_url: str) -> str:
    """A new, empty database on the server; returns its URL."""
    name = f"dex_bench_scale_{uuid.uuid4().hex[:8]}"
    engine = sa.create_engine(db.normalize_url(server_url), isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    engine.dispose()
    return sa.engine.make_url(server_url).set(database=name).render_as_string(hide_password=False)


def drop_database(server_url: str, url: str) -> None:
    name = sa.engine.make_url(url).database
    engine = sa.create_engine(db.normalize_url(server_url), isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    engine.dispose()


def database_settings(url: str) -> str:
    engine = db.create_engine(url)
    with engine.connect() as conn:
        fsync = conn.exec_driver_sql("SHOW fsync").scalar()
        commit = conn.exec_driver_sql("SHOW synchronous_commit").scalar()
        version = conn.exec_driver_sql("SHOW server_version").scalar()
    engine.dispose()
    return f"Postgres {version}, fsync={fsync} synchronous_commit={commit}"


def workers_of_sessions(url: str, sessions: list[str]) -> dict[str, Counter[str]]:
    """For each session, how many of its Step workflows each Worker (DBOS executor) ran."""
    engine = db.create_engine(url)
    with engine.connect() as conn:
        workflows = dbos_internals.workflow_status(conn)
        rows = conn.execute(
            sa.select(workflows.c.workflow_uuid, workflows.c.executor_id).where(
                workflows.c.name == STEP_WORKFLOW
            )
        ).all()
    engine.dispose()
    by_session: dict[str, Counter[str]] = defaultdict(Counter)
    for workflow_id, executor in rows:
        by_session[workflow_id.rpartition("/")[0]][executor] += 1
    return {s: by_session[s] for s in sessions}


# -- CPU ----------------------------------------------------------------------------------------


def own_cpu() -> float:
    t = os.times()
    return t.user + t.system


def process_cpu(pid: int) -> float | None:
    try:
        t = psutil.Process(pid).cpu_times()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None
    return float(t.user + t.system)


class Backends:
    """CPU of the Postgres backends connected to one database, when the server is local."""

    def __init__(self, url: str) -> None:
        self.name = sa.engine.make_url(url).database
        host = sa.engine.make_url(url).host
        self.local = host in (None, "", "localhost", "127.0.0.1", "::1")
        self.engine = db.create_engine(url, pool_size=1)

    def cpu(self) -> dict[int, float]:
        if not self.local:
            return {}
        with self.engine.connect() as conn:
            pids = conn.execute(
                sa.text("select pid from pg_stat_activity where datname = :name"),
                {"name": self.name},
            ).scalars()
            found = {pid: process_cpu(pid) for pid in pids}
        return {pid: cpu for pid, cpu in found.items() if cpu is not None}

    def close(self) -> None:
        self.engine.dispose()


def busy_cores_seconds() -> tuple[float, float]:
    """(busy CPU seconds, all CPU seconds) of the whole machine so far."""
    t = psutil.cpu_times()
    idle = t.idle + getattr(t, "iowait", 0.0)
    total = sum(t)
    return total - idle, total


# -- a run ---------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


async def run(server_url: str, workers: int, sessions: int, turns: int) -> dict[str, Any]:
    url = create_database(server_url)
    logs = Path(tempfile.mkdtemp(prefix="dex-bench-scale-"))
    procs: list[WorkerProcess] = []
    client: AgentClient | None = None
    backends = Backends(url)
    try:
        for i in range(1, workers + 1):
            worker_id = f"bench-worker-{i}"
            proc = WorkerProcess(
                "instant_app:flows",
                database_url=url,
                env={WORKER_ID_ENV: worker_id},
                cwd=HERE,
                log_path=logs / f"{worker_id}.log",
            )
            await asyncio.to_thread(proc.start)
            procs.append(proc)
        pids = {}
        for proc in procs:
            assert proc.process is not None and proc.worker_id is not None
            pids[proc.worker_id] = proc.process.pid

        client = AgentClient(url)
        ids = [await client.start_session(FLOW_TYPE) for _ in range(sessions)]
        for session in ids:
            await client.wait_for(session, lambda snap: snap.state is not None, timeout=60)

        latencies: list[float] = []

        async def drive(session: str, count: int, record: bool) -> None:
            assert client is not None
            for k in range(count):
                start = time.perf_counter()
                result = await client.run_turn(session, f"turn {k}", timeout=TURN_TIMEOUT)
                if record:
                    latencies.append(time.perf_counter() - start)
                if result.status != "completed":
                    raise RuntimeError(f"{session}: turn {result.status}: {result.error}")

        await asyncio.gather(*(drive(s, WARM_UP_TURNS, False) for s in ids))

        client0 = own_cpu()
        workers0 = {w: process_cpu(pid) or 0.0 for w, pid in pids.items()}
        backends0 = backends.cpu()
        busy0, total0 = busy_cores_seconds()
        wall0 = time.perf_counter()
        await asyncio.gather(*(drive(s, turns, True) for s in ids))
        wall = time.perf_counter() - wall0
        busy1, total1 = busy_cores_seconds()
        backends1 = backends.cpu()
        workers1 = {w: process_cpu(pid) or 0.0 for w, pid in pids.items()}
        client1 = own_cpu()
        load = os.getloadavg()

        done = sessions * turns
        worker_cpu = {w: workers1[w] - workers0[w] for w in pids}
        postgres_cpu = sum(cpu - backends0.get(pid, 0.0) for pid, cpu in backends1.items())
        client_cpu = client1 - client0
        ours = client_cpu + sum(worker_cpu.values()) + postgres_cpu
        cores = os.cpu_count() or 1
        machine_cores = (busy1 - busy0) / (total1 - total0) * cores if total1 > total0 else 0.0

        spread = workers_of_sessions(url, ids)
        sessions_per_worker: Counter[str] = Counter()
        workflows_per_worker: Counter[str] = Counter()
        mixed = 0
        for counts in spread.values():
            workflows_per_worker.update(counts)
            if len(counts) == 1:
                sessions_per_worker[next(iter(counts))] += 1
            elif counts:
                mixed += 1
        return {
            "workers": workers,
            "sessions": sessions,
            "turns_per_session": turns,
            "turns": done,
            "seconds": round(wall, 3),
            "turns_per_s": done / wall,
            "latency_ms_median": statistics.median(latencies) * 1000,
            "latency_ms_p95": percentile(latencies, 0.95) * 1000,
            "cpu_ms_per_turn": {
                "client": client_cpu / done * 1000,
                "workers": {w: cpu / done * 1000 for w, cpu in worker_cpu.items()},
                "postgres": postgres_cpu / done * 1000 if backends.local else None,
                "total": ours / done * 1000,
            },
            "cores_used": {
                "client": client_cpu / wall,
                "workers": {w: cpu / wall for w, cpu in worker_cpu.items()},
                "postgres": postgres_cpu / wall if backends.local else None,
                "this_run": ours / wall,
                "machine": machine_cores,
                "of": cores,
            },
            "load_average": [round(x, 2) for x in load],
            "sessions_per_worker": {w: sessions_per_worker[w] for w in pids},
            "sessions_on_several_workers": mixed,
            "step_workflows_per_worker": {w: workflows_per_worker[w] for w in pids},
        }
    except BaseException:
        for proc in procs:
            print(f"--- log of {proc.worker_id} ({proc.log_path}):\n{proc.log()[-4000:]}")
        raise
    finally:
        if client is not None:
            await client.close()
        await asyncio.gather(*(asyncio.to_thread(p.stop) for p in procs))
        backends.close()
        with contextlib.suppress(Exception):
            drop_database(server_url, url)


def print_run(name: str, r: dict[str, Any]) -> None:
    cpu, cores = r["cpu_ms_per_turn"], r["cores_used"]
    print(
        f"\n{name}: {r['sessions']} session(s) x {r['turns_per_session']} turns "
        f"({r['seconds']:.1f} s)"
    )
    print(
        f"  {r['turns_per_s']:7.1f} turns/s   latency median {r['latency_ms_median']:6.1f} ms"
        f"   p95 {r['latency_ms_p95']:6.1f} ms"
    )
    parts = [f"client {cpu['client']:.1f}"]
    parts += [f"{w} {ms:.1f}" for w, ms in cpu["workers"].items()]
    if cpu["postgres"] is not None:
        parts.append(f"Postgres {cpu['postgres']:.1f}")
    print(f"  CPU ms per turn: {', '.join(parts)} (total {cpu['total']:.1f})")
    parts = [f"client {cores['client']:.2f}"]
    parts += [f"{w} {c:.2f}" for w, c in cores["workers"].items()]
    if cores["postgres"] is not None:
        parts.append(f"Postgres {cores['postgres']:.2f}")
    print(
        f"  cores used: {', '.join(parts)}; this run {cores['this_run']:.2f}, "
        f"whole machine {cores['machine']:.2f} of {cores['of']}"
    )
    spread = ", ".join(f"{w} {n}" for w, n in r["sessions_per_worker"].items())
    flows = ", ".join(f"{w} {n}" for w, n in r["step_workflows_per_worker"].items())
    print(
        f"  sessions per Worker: {spread} (on several: {r['sessions_on_several_workers']})"
        f"; Step workflows per Worker: {flows}"
    )
    print(f"  load average: {' '.join(f'{x:.2f}' for x in r['load_average'])}")


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    print(f"{database_settings(args.postgres)}; {os.cpu_count()} CPUs")
    result: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}",
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
        "runs": {},
    }
    runs = result["runs"]
    plan = [
        ("baseline", "1 Worker, 1 session", 1, 1, args.baseline_turns),
        ("one_worker", "1 Worker", 1, args.sessions, args.turns),
        ("two_workers", "2 Workers", 2, args.sessions, args.turns),
    ]
    for key, name, workers, sessions, turns in plan:
        runs[key] = await run(args.postgres, workers, sessions, turns)
        print_run(name, runs[key])
    one, two, base = runs["one_worker"], runs["two_workers"], runs["baseline"]
    result["two_vs_one"] = {
        "turns_per_s": two["turns_per_s"] / one["turns_per_s"],
        "latency_median": two["latency_ms_median"] / one["latency_ms_median"],
    }
    print(
        f"\n2 Workers vs 1: turns/s {result['two_vs_one']['turns_per_s']:.2f}x, "
        f"median latency {result['two_vs_one']['latency_median']:.2f}x"
    )
    result["growth_from_one_session"] = {}
    for key, name in (("one_worker", "1 Worker"), ("two_workers", "2 Workers")):
        r = runs[key]
        growth = {
            # Wall time per turn (1 / turns/s): below 1x, concurrency pays.
            "wall_per_turn": base["turns_per_s"] / r["turns_per_s"],
            "latency_median": r["latency_ms_median"] / base["latency_ms_median"],
            "cpu_per_turn": r["cpu_ms_per_turn"]["total"] / base["cpu_ms_per_turn"]["total"],
        }
        result["growth_from_one_session"][key] = growth
        print(
            f"{args.sessions} sessions vs 1, {name}: wall time per turn "
            f"{growth['wall_per_turn']:.2f}x, median latency {growth['latency_median']:.2f}x, "
            f"CPU per turn {growth['cpu_per_turn']:.2f}x"
        )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--postgres",
        metavar="URL",
        required=True,
        help="a Postgres server on which the bench may create and drop databases",
    )
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--turns", type=int, default=10, help="measured turns per session")
    parser.add_argument(
        "--baseline-turns", type=int, default=50, help="turns of the 1-session baseline"
    )
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args()
    result = asyncio.run(bench(args))
    result.update(
        sessions=args.sessions, turns_per_session=args.turns, baseline_turns=args.baseline_turns
    )
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
