"""A session's events as Server-Sent Events: `GET /api/sessions/{id}/events`.

Each event is one SSE event whose `id` is its offset (the resume token) and whose `data` is
the AgentEvent as JSON with `payload` as an object; no `event:` field, so EventSource's
`onmessage` gets them all. The stream starts after `Last-Event-ID` (what a reconnecting
EventSource sends), else after `?after=`, else at the beginning. A comment every
`heartbeat_seconds` keeps idle connections open. Commits wake the stream through the
application's one AgentClient wake feed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi import APIRouter, Header, Query
from sse_starlette import EventSourceResponse, ServerSentEvent

from ..client import AgentClient
from ..errors import InvalidResumeTokenError
from ..types import json_text
from .deps import Client, HeartbeatSeconds
from .guards import GuardedRoute
from .resume import chosen_token, event_offset
from .rules import SessionIdPath
from .wire import Event, event_json

router = APIRouter(route_class=GuardedRoute)

# The wake feed wakes a stream at each commit; this is only the look a stream takes when
# nothing woke it for this long.
FALLBACK_LOOK_SECONDS = 60.0


@router.get(
    "/sessions/{session_id}/events",
    summary="Follow a session's events (Server-Sent Events)",
    response_class=EventSourceResponse,
    responses={
        200: {
            "description": "`id: <offset>` and `data: <event JSON>` per event; `: ping` "
            "comments while idle.",
            "content": {"text/event-stream": {"schema": Event.model_json_schema()}},
        },
        400: {"description": "The resume token is not an offset of this session's events"},
    },
)
async def follow_events(
    session_id: SessionIdPath,
    client: Client,
    heartbeat_seconds: HeartbeatSeconds,
    after: str | None = Query(None, description="Start after this resume token [default 0]."),
    last_event_id: str | None = Header(None, description="Wins over `after` when sent."),
    # Read by the auth dependency; declared here so OpenAPI documents it.
    access_token: str | None = Query(
        None, description="A session token (never the server's token), for EventSource."
    ),
) -> EventSourceResponse:
    """Live events from the resume token on, until the client disconnects. A token that is
    not a non-negative integer, or is beyond the session's last event, gets 400 before the
    stream starts."""
    field, token = chosen_token(last_event_id, after, "after")
    start = await _resume_offset(client, session_id, token or "0", field)
    return EventSourceResponse(_stream(client, session_id, start), ping=heartbeat_seconds, sep="\n")


async def _resume_offset(client: AgentClient, session_id: str, token: str, field: str) -> int:
    """The offset to follow after; raises 400 for a token that is not one of this session's
    event offsets (offsets run 1, 2, 3... without gaps), or is older than the oldest event the
    session keeps (its event log is bounded: the oldest events are trimmed), and 404 for an
    unknown session. The offset just before the oldest kept event is a good token: nothing
    after it is lost."""
    offset = event_offset(token, field)
    first = await client.read_events(session_id, after=max(offset - 1, 0), limit=1)
    if offset == 0 or (first and first[0].offset in (offset, offset + 1)):
        return offset
    if not first:
        raise InvalidResumeTokenError(
            f"the resume token {offset} is beyond this session's last event", field
        )
    raise InvalidResumeTokenError(trimmed_token(offset, first[0].offset), field)


def trimmed_token(offset: int, oldest: int) -> str:
    return (
        f"the resume token {offset} is older than this session's oldest kept event "
        f"({oldest}): its event log keeps only the newest events; read the snapshot and "
        "open the stream after its resume_token"
    )


async def _stream(
    client: AgentClient, session_id: str, after: int
) -> AsyncIterator[ServerSentEvent]:
    events = client.follow_events(session_id, after=after, poll_interval=FALLBACK_LOOK_SECONDS)
    async for event in events:
        yield ServerSentEvent(data=json_text(event_json(event)), id=str(event.offset))
