"""Cross-process wake-up latency and idle cost, on SQLite or Postgres.

One process listens for wake-ups the way a Worker does (a `Waker`); a second process commits
wake-ups one at a time and prints when each commit returned. The latency is the time from
that commit's return to the listener's wake-up (one host, one clock). The idle cost is the
listener's CPU time while nobody commits.

    uv run python bench/wake_latency.py [DATABASE_URL] [COUNT]

DATABASE_URL defaults to a SQLite file in a temporary directory.
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial

from dex_agents import store, waker
from dex_agents.db import Database


def write(url: str, count: int) -> None:
    database = Database(url)
    for i in range(count):
        time.sleep(random.uniform(0.02, 0.05))
        database.write_sync(partial(store.wake, session_id=f"bench-{os.getppid()}-{i}"))
        print(i, time.time(), flush=True)
    database.close()


async def listen(url: str, count: int) -> None:
    database = Database(url)
    database.create_schema()
    interval = waker.WAKE_POLL_SECONDS
    listener = waker.Waker(database, interval)
    listener.bind(asyncio.get_running_loop())
    woken: dict[str, float] = {}

    def heard(sessions: set[str]) -> None:
        for session in sessions:
            woken.setdefault(session, time.time())

    listener.add_listener(heard)
    task = asyncio.create_task(listener.poll_forever())
    await asyncio.sleep(1.0)

    cpu, wall = time.process_time(), time.monotonic()
    await asyncio.sleep(5.0)
    idle = (time.process_time() - cpu) / (time.monotonic() - wall)

    child = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--write", url, str(count), stdout=subprocess.PIPE
    )
    out, _ = await child.communicate()
    await asyncio.sleep(0.5)
    task.cancel()
    lines = [line.split() for line in out.decode().splitlines() if line]
    committed = {f"bench-{os.getpid()}-{i}": float(t) for i, t in lines}
    latencies = sorted((woken[s] - t) * 1000 for s, t in committed.items() if s in woken)
    missed = len(committed) - len(latencies)
    p95 = latencies[int(len(latencies) * 0.95) - 1]
    if not database.sqlite:
        kind = "postgres (LISTEN/NOTIFY)"
    elif database.wake_directory is not None and database.wake_directory.is_dir():
        kind = "sqlite (datagrams)"
    else:
        kind = f"sqlite ({interval * 1000:g} ms probe)"
    print(
        f"{kind}: commit-to-wake median "
        f"{statistics.median(latencies):.2f} ms, p95 {p95:.2f} ms, max {latencies[-1]:.2f} ms "
        f"({len(latencies)} wake-ups, {missed} missed); idle CPU {idle * 100:.2f}% of a core"
    )
    database.close()


def main() -> None:
    if sys.argv[1:2] == ["--write"]:
        write(sys.argv[2], int(sys.argv[3]))
        return
    url = sys.argv[1] if len(sys.argv) > 1 else ""
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    if not url:
        url = "sqlite:///" + os.path.join(tempfile.mkdtemp(), "wake.sqlite")
    asyncio.run(listen(url, count))


if __name__ == "__main__":
    main()
