"""The AI SDK UI message stream: one turn per response, for `useChat`.

- `POST /api/sessions/{id}/chat` takes what `DefaultChatTransport` sends (the chat ID is the
  session ID). A last message from the user is sent to the session (`send_user_message`)
  and the turn it begins is streamed. A last assistant message whose dynamic tool parts
  are `approval-responded` resolves each approval still pending in the active turn
  (`resolve_interrupt`) and streams the rest of that turn.
- `GET /api/sessions/{id}/chat/stream?token=` (or `Last-Event-ID`) resumes: it replays the
  token's turn from its start, or with `exact=true` continues right after the token. With
  no token it replays the active turn, and answers 204 when there is none.
- `GET /api/sessions/{id}/ui-messages`: the snapshot as UI messages, for page reloads.

Each chunk is `data: <chunk JSON>` with `id: <resume token>`; the stream ends with
`data: [DONE]`, and carries `x-vercel-ai-ui-message-stream: v1`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import APIRouter, Header, Query
from fastapi.responses import Response
from pydantic import AliasChoices, BaseModel, ConfigDict, Field
from sse_starlette import EventSourceResponse, ServerSentEvent

from ..client import AgentClient
from ..errors import InvalidInputError, InvalidResumeTokenError
from ..types import AgentUserMessage, json_text
from .deps import Client, HeartbeatSeconds
from .guards import GuardedRoute
from .resume import chosen_token
from .rules import SessionIdPath
from .ui_follow import StreamPlan, UIChunk, follow_turn
from .ui_messages import convert_agent_snapshot_to_ui_messages
from .ui_stream import BrowserParts
from .ui_token import UIStreamToken
from .wire import WireJSONResponse

router = APIRouter(tags=["chat"], route_class=GuardedRoute)

UI_STREAM_HEADERS = {"x-vercel-ai-ui-message-stream": "v1", "Cache-Control": "no-cache"}
STREAM_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The AI SDK UI message stream (`x-vercel-ai-ui-message-stream: v1`): "
        "`id: <resume token>` and `data: <chunk JSON>` per chunk, then `data: [DONE]`.",
        "content": {"text/event-stream": {}},
    }
}


class ChatBody(BaseModel):
    """What `useChat`'s `DefaultChatTransport` sends; fields the app adds are ignored."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(description="The chat ID: the session's ID.")
    messages: list[dict[str, Any]] = Field(min_length=1, description="The UI messages.")
    trigger: Literal["submit-message", "regenerate-message"] = "submit-message"
    message_id: str | None = Field(None, validation_alias=AliasChoices("messageId", "message_id"))


@router.post(
    "/sessions/{session_id}/chat",
    response_class=EventSourceResponse,
    responses=STREAM_RESPONSE,
    summary="Send a message or approvals and stream the turn (AI SDK UI message stream)",
)
async def chat(
    session_id: SessionIdPath, body: ChatBody, client: Client, heartbeat_seconds: HeartbeatSeconds
) -> EventSourceResponse:
    """A last user message starts (or queues) a turn; a last assistant message answers the
    active turn's approvals. Either way the response streams that turn."""
    if body.id != session_id:
        raise InvalidInputError(f"id {body.id!r} is not this session's ID (the chat ID)", "id")
    if body.trigger == "regenerate-message":
        raise InvalidInputError(
            "a session's turns cannot be regenerated; send a new message", "trigger"
        )
    last = body.messages[-1]
    role = last.get("role")
    if role == "user":
        plan = await _user_message_plan(client, session_id, last)
    elif role == "assistant":
        plan = await _approvals_plan(client, session_id, last)
    else:
        raise InvalidInputError(
            "the last message must be a user or an assistant message", "messages"
        )
    return _stream(client, plan, heartbeat_seconds)


@router.get(
    "/sessions/{session_id}/chat/stream",
    response_class=EventSourceResponse,
    responses={
        **STREAM_RESPONSE,
        204: {"description": "No token was given and no turn is active."},
        400: {"description": "The token is not a resume token of this session's stream."},
    },
    summary="Resume a turn's UI message stream",
)
async def resume(
    session_id: SessionIdPath,
    client: Client,
    heartbeat_seconds: HeartbeatSeconds,
    token: str | None = Query(None, description="A chunk's `id`: the UI stream resume token."),
    exact: bool = Query(False, description="Continue after the token, not from the turn's start."),
    last_event_id: str | None = Header(None, description="Wins over `token` when sent."),
    access_token: str | None = Query(
        None, description="A session token (never the server's token), for EventSource."
    ),
) -> Response:
    """Replays the token's turn from its start (`useChat` rebuilds the message), or with
    `exact=true` continues after the token, re-opening the parts the browser held open. A
    token whose position this session does not have replays its turn from the start."""
    field, text = chosen_token(last_event_id, token, "token")
    if text is None:
        plan = await _active_turn_plan(client, session_id)
        if plan is None:
            return Response(status_code=204)
    else:
        parsed = UIStreamToken.decode(text, field)
        plan = await _resume_plan(client, session_id, parsed, field, exact=exact)
    return _stream(client, plan, heartbeat_seconds)


@router.get(
    "/sessions/{session_id}/ui-messages",
    summary="The session's messages as AI SDK UI messages",
    response_model=list[dict[str, Any]],
)
async def ui_messages(session_id: SessionIdPath, client: Client) -> WireJSONResponse:
    """The snapshot's messages (the last 200) as `UIMessage`s: what `useChat` starts from
    after a page reload (`messages`), then `resumeStream()` for an active turn."""
    snapshot = await client.get_agent_snapshot(session_id)
    return WireJSONResponse(convert_agent_snapshot_to_ui_messages(snapshot))


# Plans ----------------------------------------------------------------------------------------


async def _user_message_plan(
    client: AgentClient, session_id: str, message: dict[str, Any]
) -> StreamPlan:
    parts = message.get("parts")
    texts = [p.get("text") for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []
    text = "".join(t for t in texts if isinstance(t, str))
    if not text.strip():
        raise InvalidInputError("the last message has no text", "messages")
    queued = await client.send_user_message_for_turn(session_id, AgentUserMessage(text=text))
    if queued is None:
        raise InvalidInputError("the session did not take the message", "messages")
    after = queued.event_offset
    return StreamPlan(session_id, after=after, message_id=queued.message_id, emit_after=after)


async def _approvals_plan(
    client: AgentClient, session_id: str, message: dict[str, Any]
) -> StreamPlan:
    answers = _approval_responses(message)
    read = await client.get_agent_snapshot_with_resume_token(session_id)
    state = read.snapshot.state
    turn_id = state.active_turn_id if state else None
    if turn_id is None:
        raise InvalidInputError("no turn is active: there is no approval to answer", "messages")
    interrupts = read.snapshot.pending_interrupts
    pending = {i.interrupt_id for i in interrupts if i.kind == "tool_approval"}
    for approval_id, approved, reason in answers:
        if approval_id in pending:
            await client.resolve_interrupt(session_id, approval_id, approved, reason)
    start = await client.turn_start_offset(session_id, turn_id)
    if start is None:
        raise InvalidInputError(f"turn {turn_id} has no start event", "messages")
    return StreamPlan(
        session_id,
        after=start,
        turn_id=turn_id,
        turn_start=start,
        emit_after=read.resume_token,
    )


def _approval_responses(message: dict[str, Any]) -> list[tuple[str, bool, str | None]]:
    """(approval ID, approved, reason) of each `approval-responded` tool part."""
    answers: list[tuple[str, bool, str | None]] = []
    parts = message.get("parts")
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, dict) or part.get("state") != "approval-responded":
            continue
        approval = part.get("approval")
        if not isinstance(approval, dict):
            raise InvalidInputError("an approval-responded part has no approval", "messages")
        approval_id, approved = approval.get("id"), approval.get("approved")
        reason = approval.get("reason")
        if not isinstance(approval_id, str) or not isinstance(approved, bool):
            raise InvalidInputError("an approval needs an id (str) and approved (bool)", "messages")
        if reason is not None and not isinstance(reason, str):
            raise InvalidInputError("an approval's reason must be a string", "messages")
        answers.append((approval_id, approved, reason))
    if not answers:
        raise InvalidInputError(
            "the last message is an assistant message without approval responses", "messages"
        )
    return answers


async def _active_turn_plan(client: AgentClient, session_id: str) -> StreamPlan | None:
    snapshot = await client.get_agent_snapshot(session_id)
    turn_id = snapshot.state.active_turn_id if snapshot.state else None
    if turn_id is None:
        return None
    start = await client.turn_start_offset(session_id, turn_id)
    if start is None:
        return None
    return _replay(session_id, turn_id, start)


async def _resume_plan(
    client: AgentClient, session_id: str, token: UIStreamToken, field: str, *, exact: bool
) -> StreamPlan:
    start = await _turn_start(client, session_id, token)
    if start is None:
        raise InvalidResumeTokenError(f"{field} names a turn this session does not have", field)
    read = await client.get_agent_snapshot_with_resume_token(session_id)
    if not exact or start != token.start or token.o > read.resume_token:
        return _replay(session_id, token.turn, start)
    if await _trimmed_past(client, session_id, token.o):
        # The events after the token's position are trimmed: the turn restarts from its start.
        return _replay(session_id, token.turn, start)
    return StreamPlan(
        session_id,
        after=start,
        turn_id=token.turn,
        turn_start=start,
        emit_after=token.o,
        skip=token.k,
        reopen=BrowserParts(token.step, list(token.text), list(token.reasoning)),
    )


async def _turn_start(client: AgentClient, session_id: str, token: UIStreamToken) -> int | None:
    """The token's turn start when the session's event there starts that turn, else looked
    up (a token whose offsets this session does not have). A turn whose start the bounded
    event log trimmed starts at its oldest kept event."""
    first = await client.read_events(session_id, after=token.start, limit=1)
    if first and first[0].type == "turn_started" and first[0].turn_id == token.turn:
        return token.start
    if first and first[0].offset > token.start + 1 and first[0].turn_id == token.turn:
        return first[0].offset - 1
    return await client.turn_start_offset(session_id, token.turn)


async def _trimmed_past(client: AgentClient, session_id: str, offset: int) -> bool:
    """Whether events right after `offset` were trimmed (the event log is bounded)."""
    first = await client.read_events(session_id, after=offset, limit=1)
    return bool(first) and first[0].offset > offset + 1


def _replay(session_id: str, turn_id: str, start: int) -> StreamPlan:
    return StreamPlan(session_id, after=start, turn_id=turn_id, turn_start=start, emit_after=start)


# The response ---------------------------------------------------------------------------------


def _stream(client: AgentClient, plan: StreamPlan, heartbeat_seconds: float) -> EventSourceResponse:
    return EventSourceResponse(
        _events(client, plan), ping=heartbeat_seconds, sep="\n", headers=UI_STREAM_HEADERS
    )


async def _events(client: AgentClient, plan: StreamPlan) -> AsyncIterator[ServerSentEvent]:
    chunk: UIChunk
    async for chunk in follow_turn(client, plan):
        yield ServerSentEvent(data=json_text(chunk.chunk), id=chunk.token)
    yield ServerSentEvent(data="[DONE]")
