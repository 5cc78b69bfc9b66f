"""A database that is briefly unavailable delays a session; it loses nothing."""

from __future__ import annotations

import sqlite3
import threading
import time

import sqlalchemy as sa

from dex_agents.testing import ScriptedReply, reply_tools

from .helpers import tool_messages, turns_done


def _hold_sqlite_lock(path: str, seconds: float, locked: threading.Event) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    locked.set()
    time.sleep(seconds)
    conn.execute("COMMIT")
    conn.close()


def _drop_connections(url: str) -> int:
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://"))
    with engine.connect() as conn:
        dropped = conn.execute(
            sa.text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        ).scalar_one()
    engine.dispose()
    return int(dropped)


async def test_a_turn_outlasts_a_database_outage(
    database_url, make_worker, model, client, tool_log
):
    model.enqueue(
        reply_tools(("r1", "get_weather", {"city": "Quito"})),
        ScriptedReply(text="Mild in Quito.", delay_seconds=1.0),
    )
    with make_worker():
        session = await client.start_session("Assistant", "Weather in Quito?")
        model.wait_for_requests(2)  # the second model call is running
        if database_url.startswith("sqlite"):
            locked = threading.Event()
            path = database_url.removeprefix("sqlite:///")
            holder = threading.Thread(target=_hold_sqlite_lock, args=(path, 3.0, locked))
            holder.start()
            locked.wait(5)
            holder.join()
        else:
            assert _drop_connections(database_url) > 0
        snapshot = await client.wait_for(session, turns_done(1), timeout=60)

    assert tool_log.count("get_weather") == 1
    assert [m.text for m in snapshot.messages][-1] == "Mild in Quito."
    assert tool_messages(model, 1) == {"r1": '{"city": "Quito", "forecast": "sunny"}'}
    assert len(model.requests) == 2  # no model call repeated
