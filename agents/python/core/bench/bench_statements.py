"""Counts the database work of one turn: transactions and statements, by table.

    cd agents/python/core/bench && uv run python bench_statements.py [--postgres URL]

The engine-only Flow of instant_app.py (RunModel -> CallTool -> ResumeTurn -> RunModel) in an
in-process Worker, 5 warm-up turns, then 20 counted turns; the client's own statements
(send_user_message and the bench's turn check) are counted apart. Counts, not times: the
figure holds on a busy machine too. Then each transaction (`Database.read` / `write`) by
the Step that made it and the function it ran (the bench's own turn check is "-").
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import functools
import re
import tempfile
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from bench_core import TurnWatcher
from instant_app import FLOW

from dex_agents import AgentClient, Worker
from dex_agents.db import Database
from dex_agents.logs import current_step

TURNS = 20
TABLE = re.compile(r'\b(?:FROM|INTO|UPDATE|JOIN)\s+"?(?:dbos"?\."?)?([a-z_]+)', re.IGNORECASE)


class Counter:
    def __init__(self) -> None:
        self.on = False
        self.statements: collections.Counter[str] = collections.Counter()
        self.commits = 0
        self.begins = 0
        self.transactions: collections.Counter[str] = collections.Counter()

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

    def transaction(self, kind: str, fn: Any) -> None:
        if not self.on:
            return
        fn = fn.func if isinstance(fn, functools.partial) else fn
        name = getattr(fn, "__qualname__", type(fn).__name__).replace(".<locals>", "")
        step = current_step.get()
        self.transactions[f"{kind:5} {step.step_type if step else '-':17} {name}"] += 1

    def watch_transactions(self) -> None:
        """Counts every Database transaction of this process (Worker and client)."""
        write_once, read_once = Database._write_once, Database._read_once

        def counted_write(db: Database, engine: Any, fn: Any) -> Any:
            self.transaction("write", fn)
            return write_once(db, engine, fn)

        def counted_read(db: Database, fn: Any) -> Any:
            self.transaction("read", fn)
            return read_once(db, fn)

        Database._write_once = counted_write  # type: ignore[method-assign,assignment]
        Database._read_once = counted_read  # type: ignore[method-assign,assignment]


async def count(url: str) -> None:
    counter = Counter()
    sa.event.listen(sa.engine.Engine, "before_cursor_execute", counter.statement)
    sa.event.listen(sa.engine.Engine, "commit", counter.commit)
    sa.event.listen(sa.engine.Engine, "begin", counter.begin)
    counter.watch_transactions()
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
    print("  transactions per turn, by Step and function:")
    for key, n in counter.transactions.most_common():
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
