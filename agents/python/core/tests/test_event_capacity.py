"""The bounded event log: a session keeps the newest events within its Flow's capacity,
trimmed in the commits that append, and a resume token older than the oldest kept event gets
the contract's answer (SSE: 400 before the stream starts; the UI stream replays the turn).

Storage of a long session is measured on demand by bench/event_capacity.py.
"""

from __future__ import annotations

import json

import httpx
import pytest
import sqlalchemy as sa

from dex_agents import AgentSessionOptions, store
from dex_agents.db import Database, events
from dex_agents.store import EventRecord
from dex_agents.testing import ServeProcess, reply_text
from dex_agents.types import AgentSessionStartInput
from dex_agents.web.ui_token import UIStreamToken

from .helpers import turns_done

CAPACITY = 64 * 1024


def _record(index: int, size: int) -> EventRecord:
    return EventRecord("text_delta", "turn-1", 1, {"text": f"{index}:" + "x" * size}, "RunModel-1")


def _kept(database: Database, session_id: str) -> tuple[store.Session, list[tuple[int, int]]]:
    def read(conn: sa.Connection) -> tuple[store.Session, list[tuple[int, int]]]:
        query = sa.select(events.c.offset, events.c.size).where(events.c.session_id == session_id)
        rows = [(row[0], row[1]) for row in conn.execute(query.order_by(events.c.offset))]
        return store.read_session(conn, session_id), rows

    return database.read_sync(read)


def test_a_session_keeps_its_newest_events_within_its_capacity(database_url):
    database = Database(database_url)
    database.create_schema()
    try:
        start = AgentSessionStartInput(initial_message=None)
        database.write_sync(lambda conn: store.create_session(conn, "s1", "Assistant", start))
        for index in range(300):
            record = _record(index, 900 + index % 7 * 100)
            if index % 2:

                def locked(conn: sa.Connection, record: EventRecord = record) -> None:
                    session = store.lock_session(conn, "s1")
                    store.write_events(conn, session, [record], capacity=CAPACITY)
                    store.save_session(conn, session)

                database.write_sync(locked)
            else:
                database.write_sync(
                    lambda conn, r=record: store.append_events_unlocked(conn, "s1", [r])
                )
            session, rows = _kept(database, "s1")
            assert session.event_bytes == sum(size for _, size in rows) <= CAPACITY
            offsets = [offset for offset, _ in rows]
            assert offsets == list(range(session.events_trimmed + 1, index + 2))
        assert session.events_trimmed > 100  # the oldest went, in batches
        assert session.event_capacity == CAPACITY
        kept = database.read_sync(lambda conn: store.read_events(conn, "s1", 0, 1000))
        assert json.loads(kept[-1].payload)["text"].startswith("299:")
    finally:
        database.close()


def test_the_capacity_is_checked():
    with pytest.raises(ValueError, match="event_capacity_bytes must be at least 65536"):
        AgentSessionOptions(event_capacity_bytes=1000)
    assert AgentSessionOptions().event_capacity_bytes == 10 * 1024 * 1024


def _first_sse_id(response: httpx.Response) -> int:
    for line in response.iter_lines():
        if line.startswith("id:"):
            return int(line.removeprefix("id:").strip())
    raise AssertionError("the stream sent no event")


async def test_a_resume_across_the_trim_gets_the_contracts_answers(
    database_url, make_worker, model, client
):
    worker = make_worker(EVENT_CAPACITY_BYTES=str(CAPACITY)).start()
    answer = "word " * 20_000  # 100 KB of text deltas in one turn, past the capacity
    model.enqueue(reply_text(answer))
    session = await client.start_session("Assistant", "Talk at length.")
    await client.wait_for(session, turns_done(1))
    worker.stop()

    first = (await client.read_events(session, after=0, limit=1))[0].offset
    trimmed = first - 1
    assert trimmed > 1, "the log was not trimmed"
    snapshot = await client.get_agent_snapshot(session)
    assert snapshot.messages[-1].text == answer  # messages are not events: all kept
    turn = snapshot.messages[-1].turn_id
    assert await client.turn_start_offset(session, turn) is None  # its start was trimmed
    # follow_events from a trimmed position goes on from the oldest kept event.
    followed = client.follow_events(session, after=1)
    assert (await anext(followed)).offset == first
    await followed.aclose()

    with ServeProcess(database_url) as server:
        url = f"{server.base_url}/api/sessions/{session}/events"
        old = httpx.get(url, params={"after": "1"}, headers=server.headers)
        assert old.status_code == 400
        assert "older than this session's oldest kept event" in old.text
        # The offset just before the oldest kept event loses nothing: the stream starts there.
        with httpx.stream(
            "GET", url, params={"after": str(trimmed)}, headers=server.headers, timeout=10
        ) as response:
            assert response.status_code == 200
            assert _first_sse_id(response) == first
        # The UI stream: an exact resume whose position was trimmed replays the turn from its
        # oldest kept event.
        token = UIStreamToken(turn=turn, start=0, o=1).encode()
        chat = f"{server.base_url}/api/sessions/{session}/chat/stream"
        with httpx.stream(
            "GET",
            chat,
            params={"token": token, "exact": "true"},
            headers=server.headers,
            timeout=10,
        ) as response:
            assert response.status_code == 200, response.read()
            chunks = [
                json.loads(line.removeprefix("data:"))
                for line in response.iter_lines()
                if line.startswith("data:") and line != "data: [DONE]"
            ]
    assert chunks[0]["type"] == "start"
    assert chunks[-1]["type"] == "finish"
    text = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
    assert text and answer.endswith(text) and len(text) < len(answer)
