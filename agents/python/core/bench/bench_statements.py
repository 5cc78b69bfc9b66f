"""Counts the database work of one turn: transactions and statements, by table.

    cd agents/python/core/bench && uv run python bench_statements.py [--postgres URL]

The engine-only Flow of instant_app.py (RunModel -> CallTool -> ResumeTurn -> RunModel) in an
in-process Worker, 5 warm-up turns, then 20 counted turns; the client's own statements
(send_user_message and the bench's turn check) are counted apart. Counts, not times: the
figure holds on a busy machine too.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import re
import tempfile
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from bench_core import TurnWatcher
from instant_app import FLOW

from dex_agents import AgentClient, Worker

TURNS = 20
TABLE = re.compile(r'\b(?:FROM|INTO|UPDATE|JOIN)\s+"?(?:dbos"?\."?)?([a-z_]+)', re.IGNORECASE)


class Counter:
    def __init__(self) -> None:
        self.on = False
        self.statements: collections.Counter[str] = collections.Counter()
        self.commits = 0
        self.begins = 0

    def statement(self, conn: Any, cursor: Any, text: str, *_: Any) -> None:
        if not self.on:
            return
        verb = text.lstrip().split(None, 1)[0].upper() if text.strip() else "?"
        match = TABLE.search(text)
        self.statements[f"{verb} {match.group(1) if match else ''}".strip()] += 1

    def commit(self, conn: Any) -> None:
        if self.on:
            self.commits += 1

    def begin(self, conn: Any) -> None:
        if self.on:
            self.begins += 1


async def count(url: str) -> None:
    counter = Counter()
    sa.event.listen(sa.engine.Engine, "before_cursor_execute", counter.statement)
    sa.event.listen(sa.engine.Engine, "commit", counter.commit)
    sa.event.listen(sa.engine.Engine, "begin", counter.begin)
    worker = Worker([FLOW], database_url=url)
    await worker.__aenter__()
    client = AgentClient(url)
    watcher = TurnWatcher(worker, client)
    assert worker.runtime is not None
    client._db().on_wake = worker.runtime.waker.notify_threadsafe
    try:
        session = await client.start_session("Bench")
        await watcher.wait_turns(session, 0)
        await watcher.run_turns(session, 5, 0)
        await asyncio.sleep(0.5)
        counter.on = True
        await watcher.run_turns(session, TURNS, 5)
        await asyncio.sleep(0.5)
        counter.on = False
    finally:
        await client.close()
        await worker.__aexit__(None, None, None)
    total = sum(counter.statements.values())
    print(
        f"  per turn: {counter.begins / TURNS:.1f} transactions begun, "
        f"{counter.commits / TURNS:.1f} commits, {total / TURNS:.1f} statements"
    )
    for key, n in counter.statements.most_common():
        print(f"    {n / TURNS:6.2f}  {key}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", help="a Postgres URL to count there too")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print("SQLite")
        await count(f"sqlite:///{Path(tmp) / 'count.sqlite'}")
    if args.postgres:
        print("Postgres")
        await count(args.postgres)


if __name__ == "__main__":
    asyncio.run(main())
