"""`fastsql` runs the store's hot statements on SQLite's own connection: each must read and
write exactly what SQLAlchemy would, and fail as SQLAlchemy would."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from dex_agents import db, fastsql, store
from dex_agents.types import AgentSessionStartInput

# Values either database refuses as text, and one that looks like the marker.
ODD = ["a\x00b", "caf\udce9", db.LOSSLESS_MARKER + '"x"', "plain", ""]


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    engine = db.create_engine(f"sqlite:///{tmp_path / 'fast.sqlite'}", busy_timeout_ms=0)
    db.metadata.create_all(engine)
    return engine


def test_rows_match_what_sqlalchemy_reads(engine: Engine) -> None:
    with engine.begin() as conn:
        session = store.create_session(conn, "s1", "Flow", AgentSessionStartInput())
        for i, text in enumerate(ODD):
            store.schedule_step(conn, session, "RunModel", {"text": text, "i": i})
            store.update_step(conn, "s1", f"RunModel-{i + 1}", checkpoint=text)
        store.update_step(conn, "s1", "RunModel-1", progress_started=True, next_steps=["a"])
        store.save_session(conn, session)
    with engine.begin() as conn:
        for i, text in enumerate(ODD):
            params = {"sid": "s1", "sx": f"RunModel-{i + 1}"}
            fast = fastsql.first(conn, store._STEP, params)
            slow = conn.execute(store._STEP, params).first()
            assert fast is not None and slow is not None
            assert tuple(fast) == tuple(slow)
            assert fast.checkpoint == text
            assert fast.progress_started is (i == 0)
        # The odd texts are stored in the marker's form, which SQLAlchemy reads back alike.
        raw = conn.exec_driver_sql("SELECT checkpoint FROM dex_steps ORDER BY seq").all()
        assert raw[0][0].startswith(db.LOSSLESS_MARKER)
        assert raw[3][0] == "plain"


def test_a_statement_needing_a_default_is_left_to_sqlalchemy(engine: Engine) -> None:
    insert = db.channel_messages.insert()  # "key" has a Python-side default
    with engine.begin() as conn:
        values = {"session_id": "s1", "channel": "C", "payload": "p", "created_at": "t"}
        fastsql.execute(conn, insert, values)
        fastsql.execute(conn, insert, {**values, "key": "k"})
        keys = conn.exec_driver_sql("SELECT key FROM dex_channel_messages ORDER BY id").all()
    assert [k for (k,) in keys] == ["", "k"]


def test_driver_errors_are_raised_as_sqlalchemy_errors(engine: Engine) -> None:
    with engine.begin() as conn:
        store.create_session(conn, "s1", "Flow", AgentSessionStartInput())
        row = {"session_id": "s1", "tool_call_id": "c1", "turn_id": "t", "deferral_order": 0}
        row |= {"status": "pending", "record": "{}"}
        fastsql.execute(conn, store._INSERT_TOOL_CALL, row)
        with pytest.raises(sa.exc.IntegrityError) as caught:
            fastsql.execute(conn, store._INSERT_TOOL_CALL, row)
        assert isinstance(caught.value.orig, sqlite3.IntegrityError)
    # Another connection holds the write lock: BEGIN IMMEDIATE fails at once (busy timeout 0)
    # with the error Database's retries take for a transient one.
    with engine.begin() as holder:
        fastsql.execute(holder, store._UPDATE_SESSION, {"b_sid": "s1", "updated_at": "x"})
        with pytest.raises(sa.exc.OperationalError, match="locked"), engine.begin():
            pass


def test_channel_messages_round_trip_with_their_ids(engine: Engine) -> None:
    with engine.begin() as conn:
        first = store.publish(conn, "s1", "C", "a\x00b")
        second = store.publish(conn, "s1", "C", "two", key="k")
        assert second == first + 1
        assert store.count(conn, "s1", "C") == 2
        assert store.count(conn, "s1", "C", key="k") == 1
        assert [(m.message_id, m.key, m.payload) for m in store.peek(conn, "s1", "C")] == [
            (first, "", "a\x00b"),
            (second, "k", "two"),
        ]
        store.clear_channel(conn, "s1", "C")
        assert store.peek(conn, "s1", "C") == []
