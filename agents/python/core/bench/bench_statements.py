"""Counts the database work of one turn: transactions and statements, by table.

    cd agents/python/core/bench && uv run python bench_statements.py [--postgres URL]
        [--flow pydantic_ai]

By default the engine-only Flow of instant_app.py (RunModel -> CallTool -> ResumeTurn ->
RunModel, its answer streamed as two deltas); with `--flow pydantic_ai`, the real Pydantic AI
adapter of bench_e2e.py (warm runs on) against its scripted model server, whose streamed
answer and stored messages are what a user's turn writes. An in-process Worker, 5 warm-up
turns, then 20 counted turns, each sent with `AgentClient.run_turn`, whose own statements
(queueing the message, reading the turn's outcome and events) are counted too. Counts, not
times: the figure holds on a busy machine too. Then each transaction (`Database.read` /
`write`) by the Step that made it and the function it ran (the client's are "-").

Statements are counted where they reach the database: on SQLite by the driver's trace
callback (the hot statements run on `sqlite3` itself, `fastsql`, which SQLAlchemy does not
see), on Postgres by SQLAlchemy, which runs every one there.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import functools
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from instant_app import FLOW

from dex_agents import AgentClient, AgentSessionFlow, Worker, db
from dex_agents.db import Database
from dex_agents.logs import current_step

WARM_UP = 5
TURNS = 20
TABLE = re.compile(r'\b(?:FROM|INTO|UPDATE|JOIN)\s+"?(?:dbos"?\."?)?([a-z_]+)', re.IGNORECASE)


def _verb(statement: str) -> str:
    return statement.lstrip().split(None, 1)[0].upper() if statement.strip() else "?"


class Counter:
    def __init__(self) -> None:
        self.on = False
        self.statements: collections.Counter[str] = collections.Counter()
        self.commits = 0
        self.begins = 0
        self.transactions: collections.Counter[str] = collections.Counter()

    def statement(self, conn: Any, cursor: Any, text: str, *_: Any) -> None:
        """SQLAlchemy's `before_cursor_execute` (Postgres)."""
        self.count_statement(text)

    def trace_driver(self, dbapi_connection: Any, _: Any) -> None:
        """SQLAlchemy's `connect` on SQLite: counts each statement of the new connection."""
        dbapi_connection.set_trace_callback(self.driver_statement)

    def driver_statement(self, text: str) -> None:
        """`sqlite3`'s trace callback: every statement, transaction control included (which
        `begin` and `commit` count)."""
        if _verb(text) not in ("BEGIN", "COMMIT", "ROLLBACK"):
            self.count_statement(text)

    def count_statement(self, text: str) -> None:
        if not self.on:
            return
        verb = _verb(text)
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

    def watch_transactions(self) -> Callable[[], None]:
        """Counts every Database transaction of this process (Worker and client); returns
        what stops it."""
        write_once, read_once = Database._write_once, Database._read_once

        def counted_write(db: Database, engine: Any, fn: Any) -> Any:
            self.transaction("write", fn)
            return write_once(db, engine, fn)

        def counted_read(db: Database, fn: Any) -> Any:
            self.transaction("read", fn)
            return read_once(db, fn)

        Database._write_once = counted_write  # type: ignore[method-assign,assignment]
        Database._read_once = counted_read  # type: ignore[method-assign,assignment]

        def stop() -> None:
            Database._write_once = write_once  # type: ignore[method-assign]
            Database._read_once = read_once  # type: ignore[method-assign]

        return stop


TurnScript = Callable[[int], None]
"""Readies the model's replies of turn k before its message is sent."""


async def count(url: str, flow: AgentSessionFlow, script: TurnScript) -> None:
    counter = Counter()
    listeners = [
        ("connect", counter.trace_driver)
        if db.is_sqlite(url)
        else ("before_cursor_execute", counter.statement),
        ("commit", counter.commit),
        ("begin", counter.begin),
    ]
    for name, listener in listeners:
        sa.event.listen(sa.engine.Engine, name, listener)
    unwatch = counter.watch_transactions()
    try:
        await _run_turns(counter, url, flow, script)
    finally:
        unwatch()
        for name, listener in listeners:
            sa.event.remove(sa.engine.Engine, name, listener)
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


async def _run_turns(
    counter: Counter, url: str, flow: AgentSessionFlow, script: TurnScript
) -> None:
    async with Worker([flow], database_url=url) as worker, AgentClient(url) as client:
        assert worker.runtime is not None
        # The client commits in this process: wake the Worker directly, as an application
        # that embeds its Worker does, instead of through the wake-up poll.
        client._db().on_wake = worker.runtime.waker.notify_threadsafe
        session = await client.start_session(flow.flow_type)
        await client.wait_for(session, lambda s: s.state is not None, timeout=60)
        for k in range(1, 1 + WARM_UP + TURNS):
            if k == WARM_UP + 1:
                await asyncio.sleep(0.5)
                counter.on = True
            script(k)
            result = await client.run_turn(session, f"turn {k}", timeout=60)
            if result.status != "completed":
                raise RuntimeError(f"turn {k} {result.status}: {result.error}")
        await asyncio.sleep(0.5)
        counter.on = False


def pydantic_ai_flow() -> tuple[AgentSessionFlow, TurnScript, Callable[[], None]]:
    """bench_e2e.py's Pydantic AI agent and its scripted model server: the Flow, the turn
    script (a tool call, then the streamed answer), and the server's stop."""
    import e2e_app
    from bench_e2e import ModelServer

    from dex_agents.testing import MODEL_URL_ENV

    model = ModelServer()
    os.environ[MODEL_URL_ENV] = model.base_url
    (flow,) = e2e_app.pydantic_ai_warm_flows
    return flow, lambda k: model.script_turn(f"call-{k}"), model.stop


def _no_script(turn: int) -> None:
    """The instant Flow's model needs no replies readied."""


def _nothing() -> None:
    pass


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", help="a Postgres URL to count there too")
    parser.add_argument(
        "--flow",
        choices=("instant", "pydantic_ai"),
        default="instant",
        help="the engine-only Flow (default), or the real Pydantic AI adapter",
    )
    args = parser.parse_args()
    setup = pydantic_ai_flow() if args.flow == "pydantic_ai" else (FLOW, _no_script, _nothing)
    flow, script, stop = setup
    try:
        with tempfile.TemporaryDirectory() as tmp:
            print("SQLite")
            await count(f"sqlite:///{Path(tmp) / 'count.sqlite'}", flow, script)
        if args.postgres:
            print("Postgres")
            await count(args.postgres, flow, script)
    finally:
        stop()


if __name__ == "__main__":
    asyncio.run(main())
