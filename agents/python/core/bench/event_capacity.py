"""Measures the storage of a long session's event log against its capacity.

    cd agents/python/core/bench && uv run python event_capacity.py [--turns 1000] [--postgres URL]

Writes a session's events as the engine does, through the store's own functions: per turn a
`turn_started`, a 4 KB answer streamed as 20-character `text_delta` events flushed in commits
of 20 (the streaming writer's `append_events_unlocked`), and the turn's end in a Step commit
(`write_events`). Prints the bytes the kept events count (what the capacity bounds), the
on-disk size of the events table (SQLite's dbstat, or Postgres's pg_total_relation_size) and
the answer text the session's messages would hold; the event log stays within the capacity,
whatever the number of turns.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from functools import partial
from pathlib import Path

import sqlalchemy as sa

from dex_agents import store
from dex_agents.db import Database
from dex_agents.store import DEFAULT_EVENT_CAPACITY_BYTES, EventRecord
from dex_agents.types import AgentSessionStartInput

ANSWER_BYTES = 4096
DELTA_CHARS = 20
DELTAS_PER_COMMIT = 20
SESSION = "bench-capacity"


def run_turn(database: Database, turn: int) -> None:
    turn_id = f"turn-{turn}"
    step = f"RunModel-{turn}"

    def locked(records: list[EventRecord]) -> None:
        def write(conn: sa.Connection) -> None:
            session = store.lock_session(conn, SESSION)
            store.write_events(conn, session, records, capacity=DEFAULT_EVENT_CAPACITY_BYTES)
            store.save_session(conn, session)

        database.write_sync(write)

    locked([EventRecord("turn_started", turn_id, 1, {"sequence": turn * 2 - 1}, "AwaitUser")])
    text = ("lorem ipsum dolor sit amet " * (ANSWER_BYTES // 27 + 1))[:ANSWER_BYTES]
    deltas = [text[i : i + DELTA_CHARS] for i in range(0, len(text), DELTA_CHARS)]
    for first in range(0, len(deltas), DELTAS_PER_COMMIT):
        records = [
            EventRecord("text_delta", turn_id, 1, {"text": delta}, step)
            for delta in deltas[first : first + DELTAS_PER_COMMIT]
        ]
        database.write_sync(
            partial(store.append_events_unlocked, session_id=SESSION, records=records)
        )
    locked([EventRecord("turn_completed", turn_id, 1, {"message_count": 2}, step)])


def table_bytes(database: Database) -> int | None:
    def read(conn: sa.Connection) -> int | None:
        if conn.dialect.name == "postgresql":
            size = conn.execute(sa.text("SELECT pg_total_relation_size('dex_events')")).scalar()
            return int(size or 0)
        try:
            query = "SELECT sum(pgsize) FROM dbstat WHERE name LIKE '%dex_events%'"
            return int(conn.execute(sa.text(query)).scalar() or 0)
        except sa.exc.OperationalError:
            return None  # SQLite built without dbstat

    return database.read_sync(read)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--postgres", metavar="URL", help="A fresh Postgres database.")
    args = parser.parse_args()
    url = args.postgres or f"sqlite:///{Path(tempfile.mkdtemp()) / 'capacity.sqlite'}"
    database = Database(url)
    database.create_schema()
    start = AgentSessionStartInput(initial_message=None)
    database.write_sync(lambda conn: store.create_session(conn, SESSION, "Bench", start))
    began = time.perf_counter()
    for turn in range(1, args.turns + 1):
        run_turn(database, turn)
    seconds = time.perf_counter() - began
    session = database.read_sync(lambda conn: store.read_session(conn, SESSION))
    kept = database.read_sync(
        lambda conn: conn.execute(
            sa.text("SELECT count(*) FROM dex_events WHERE session_id = :s"), {"s": SESSION}
        ).scalar()
    )
    on_disk = table_bytes(database)
    mib = 1024 * 1024
    print(f"{args.turns} turns, {session.event_counter} events written in {seconds:.1f} s")
    print(f"capacity:            {DEFAULT_EVENT_CAPACITY_BYTES / mib:8.2f} MiB")
    print(f"kept events:         {session.event_bytes / mib:8.2f} MiB ({kept} events)")
    if on_disk is not None:
        print(f"events table on disk:{on_disk / mib:8.2f} MiB")
    print(f"answer text (msgs):  {args.turns * ANSWER_BYTES / mib:8.2f} MiB")
    database.close()


if __name__ == "__main__":
    main()
