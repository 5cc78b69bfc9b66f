"""The session API: one endpoint per RPC, the snapshot with its resume token, Step history,
and a session's events as Server-Sent Events (`sse.py`).

Each endpoint calls the AgentClient method of its RPC, whose validation refuses bad input
(400, 413) before anything is committed, and returns its result as JSON. `{"result": false}`
is the RPC's own answer (an interrupt that is not pending, a turn that does not accept
control), not an error.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from fastapi import APIRouter, Query, status
from pydantic import BaseModel, ConfigDict, Field

from .. import validation
from ..errors import InvalidInputError
from ..types import AgentUserMessage, SessionSummary, StepExecution, WorkerInfo
from . import rules, sse
from .deps import Client
from .guards import GuardedRoute
from .rules import InterruptIdPath, MessageIdPath, SessionIdPath
from .wire import MessagesPage, Snapshot, WireJSONResponse, messages_page_json, snapshot_json

log = logging.getLogger(__name__)
router = APIRouter(
    default_response_class=WireJSONResponse, tags=["sessions"], route_class=GuardedRoute
)
router.include_router(sse.router)


class Body(BaseModel):
    """Request bodies take JSON types as they are: no str for a number, no 1 for true."""

    model_config = ConfigDict(extra="forbid", strict=True)


class StartSessionBody(Body):
    flow_type: str = Field(
        description=f"A flow type a Worker hosts. {rules.IDENTIFIER_RULE}",
        json_schema_extra=rules.identifier(),
    )
    message: str | None = Field(
        None, description=f"The first user message, if any. {rules.TEXT_RULE}"
    )
    session_id: str | None = Field(
        None,
        description=f"The new session's ID [default: random]. {rules.PATH_IDENTIFIER_RULE}",
        json_schema_extra=rules.identifier(path_segment=True),
    )
    session_settings: rules.SessionSettings | None = Field(
        None,
        description=f"A JSON object the Flow reads at each turn's start. {rules.SETTINGS_RULE}",
    )


class UserMessageBody(Body):
    text: str = Field(
        description=f"Not blank. {rules.TEXT_RULE}", json_schema_extra=rules.NOT_BLANK
    )
    plan_mode: bool = Field(False, description="Ask for a plan (Flows with plan mode only).")


class SteerBody(Body):
    text: str | None = Field(
        None,
        description=f"A new message that redirects the turn (not blank; {rules.TEXT_RULE})...",
        json_schema_extra=rules.NOT_BLANK,
    )
    message_id: str | None = Field(
        None,
        description=f"...or a queued message's ID. {rules.IDENTIFIER_RULE}",
        json_schema_extra=rules.identifier(),
    )


class CancelBody(Body):
    turn_id: str | None = Field(
        None,
        description=f"Only if this is the active turn. {rules.IDENTIFIER_RULE}",
        json_schema_extra=rules.identifier(),
    )


class ResolveBody(Body):
    approved: bool
    rejection_message: str | None = Field(
        None, description=f"Why, for the model. {rules.TEXT_RULE}"
    )


class AnswerBody(Body):
    answer: str = Field(description=rules.TEXT_RULE)


class ExecutePlanBody(Body):
    revision: rules.JSONInt = Field(json_schema_extra=rules.integer())


class SettingsBody(Body):
    session_settings: rules.SessionSettings = Field(
        description="The settings the next turn starts with; {} clears them. " + rules.SETTINGS_RULE
    )


class StartedSession(BaseModel):
    session_id: str
    # Why the session may not start soon: no live Worker hosts its flow type (it waits, in
    # `starting`, until one does). Absent when a live Worker hosts it.
    warning: str | None = None


class RpcResult(BaseModel):
    """The RPC's answer: false when it did not apply (see each endpoint)."""

    result: bool


class SentMessage(RpcResult):
    """`send_user_message`'s answer, and where to find the turn the message begins: the first
    `turn_started` event after `event_offset` whose payload has this `message_id`."""

    message_id: str | None = None
    event_offset: int | None = None


def _result(value: bool) -> WireJSONResponse:
    return WireJSONResponse({"result": value})


@contextmanager
def _fields_named(names: Mapping[str, str]) -> Iterator[None]:
    """Names a refused argument by its field in the request (`message.text` -> `text`)."""
    try:
        yield
    except InvalidInputError as error:
        error.argument = names.get(error.argument or "", error.argument)
        raise


def _not_blank(text: str | None, field: str) -> None:
    """A user message that is only whitespace is refused as bad input (the RPC itself
    answers false for it)."""
    if text is not None and not text.strip():
        raise InvalidInputError(f"{field} must not be blank", field)


@router.get("/sessions", response_model=list[SessionSummary], summary="List sessions")
async def list_sessions(
    client: Client,
    limit: int = Query(
        100, description="At most this many (1 and up).", json_schema_extra=rules.integer(1)
    ),
) -> WireJSONResponse:
    """The sessions with the most recent activity first."""
    sessions = await client.list_sessions(limit)
    return WireJSONResponse([s.model_dump(mode="json") for s in sessions])


@router.post(
    "/sessions",
    status_code=status.HTTP_201_CREATED,
    response_model=StartedSession,
    summary="Start a session",
    responses={409: {"description": "A session with this ID exists"}},
)
async def start_session(body: StartSessionBody, client: Client) -> WireJSONResponse:
    """Starts a session of a flow type; a Worker hosting it takes its first Step. `warning`
    says when no live Worker hosts the flow type (the session waits until one does)."""
    with _fields_named({"initial_message": "message"}):
        session_id = await client.start_session(
            body.flow_type,
            body.message,
            session_id=body.session_id,
            session_settings=body.session_settings,
            warn_if_not_hosted=False,
        )
    answer: dict[str, str] = {"session_id": session_id}
    reason = await client.not_hosted_reason(body.flow_type)
    if reason is not None:
        answer["warning"] = reason
        log.warning("session %s: %s", session_id, reason)
    return WireJSONResponse(answer, status.HTTP_201_CREATED)


@router.get(
    "/sessions/{session_id}/snapshot",
    response_model=Snapshot,
    summary="A session's snapshot and resume token",
)
async def get_snapshot(session_id: SessionIdPath, client: Client) -> WireJSONResponse:
    """State, recent messages, pending interrupts, tool calls, queue, plan and usage, read in
    one transaction with `resume_token`: the events after it are exactly those committed
    after the snapshot."""
    read = await client.get_agent_snapshot_with_resume_token(session_id)
    return WireJSONResponse(
        snapshot_json(
            read.snapshot,
            session_id=read.session_id,
            flow_type=read.flow_type,
            resume_token=read.resume_token,
        )
    )


@router.get(
    "/sessions/{session_id}/messages",
    response_model=MessagesPage,
    summary="A page of a session's messages",
)
async def list_messages(
    session_id: SessionIdPath,
    client: Client,
    before_sequence: int | None = Query(
        None, description="Only messages before this one.", json_schema_extra=rules.integer()
    ),
    limit: int = Query(
        50, description="Page size, clamped to 1..200.", json_schema_extra=rules.integer()
    ),
) -> WireJSONResponse:
    """Oldest first; page backwards with `next_before_sequence`."""
    page = await client.list_agent_messages(session_id, before_sequence, limit)
    return WireJSONResponse(messages_page_json(page))


@router.post(
    "/sessions/{session_id}/messages", response_model=SentMessage, summary="Send a user message"
)
async def send_message(
    session_id: SessionIdPath, body: UserMessageBody, client: Client
) -> WireJSONResponse:
    """Queues the message; the session takes it when no turn runs. False when plan mode is
    asked of a Flow without it. True comes with the message's ID and the event offset after
    which its turn's `turn_started` event (payload `message_id`) will be."""
    _not_blank(body.text, "text")
    message = AgentUserMessage(text=body.text, plan_mode=body.plan_mode)
    with _fields_named({"message.text": "text"}):
        queued = await client.send_user_message_for_turn(session_id, message)
    if queued is None:
        return _result(False)
    return WireJSONResponse(
        {"result": True, "message_id": queued.message_id, "event_offset": queued.event_offset}
    )


@router.post(
    "/sessions/{session_id}/steer", response_model=RpcResult, summary="Steer the active turn"
)
async def steer(session_id: SessionIdPath, body: SteerBody, client: Client) -> WireJSONResponse:
    """Redirects the active turn with new text or a queued message (give exactly one). False
    when the turn does not accept steering or the queued message is gone; with no active
    turn, text is queued."""
    _not_blank(body.text, "text")
    return _result(
        await client.steer_user_message(session_id, text=body.text, message_id=body.message_id)
    )


@router.delete(
    "/sessions/{session_id}/queued-messages/{message_id}",
    response_model=RpcResult,
    summary="Delete a queued message",
)
async def delete_queued_message(
    session_id: SessionIdPath, message_id: MessageIdPath, client: Client
) -> WireJSONResponse:
    """False when the message is no longer queued."""
    return _result(await client.delete_queued_message(session_id, message_id))


@router.post(
    "/sessions/{session_id}/cancel", response_model=RpcResult, summary="Cancel the active turn"
)
async def cancel_turn(
    session_id: SessionIdPath, client: Client, body: CancelBody | None = None
) -> WireJSONResponse:
    """Stops the active turn (or `turn_id`, when it is the active one). False when no such
    turn runs or it does not accept cancellation."""
    turn_id = body.turn_id if body is not None else None
    return _result(await client.cancel_turn(session_id, turn_id))


@router.post(
    "/sessions/{session_id}/interrupts/{interrupt_id}/resolve",
    response_model=RpcResult,
    summary="Approve or reject a pending interrupt",
)
async def resolve_interrupt(
    session_id: SessionIdPath, interrupt_id: InterruptIdPath, body: ResolveBody, client: Client
) -> WireJSONResponse:
    """Approves or rejects a tool approval, or declines a question (approved: false). False
    when the interrupt is not pending or its deadline passed."""
    return _result(
        await client.resolve_interrupt(
            session_id, interrupt_id, body.approved, body.rejection_message
        )
    )


@router.post(
    "/sessions/{session_id}/interrupts/{interrupt_id}/answer",
    response_model=RpcResult,
    summary="Answer a pending question",
)
async def answer_question(
    session_id: SessionIdPath, interrupt_id: InterruptIdPath, body: AnswerBody, client: Client
) -> WireJSONResponse:
    """False when it is not a pending question, the answer is blank, or it is not one of the
    choices while free text is not allowed."""
    return _result(await client.answer_question(session_id, interrupt_id, body.answer))


@router.post(
    "/sessions/{session_id}/plan/execute",
    response_model=RpcResult,
    summary="Execute a plan revision",
)
async def execute_plan(
    session_id: SessionIdPath, body: ExecutePlanBody, client: Client
) -> WireJSONResponse:
    """False unless the session waits for a message with nothing queued and `revision` is
    its current draft or active plan."""
    return _result(await client.execute_plan(session_id, body.revision))


@router.put(
    "/sessions/{session_id}/settings",
    response_model=RpcResult,
    summary="Replace the session's settings",
)
async def update_settings(
    session_id: SessionIdPath, body: SettingsBody, client: Client
) -> WireJSONResponse:
    """The next turn starts with these settings. Settings start_session would refuse (not
    strict JSON, too large) are refused with 400."""
    validation.session_settings(body.session_settings)
    return _result(await client.update_session_settings(session_id, body.session_settings))


@router.get(
    "/sessions/{session_id}/steps",
    response_model=list[StepExecution],
    summary="A session's Step history",
)
async def step_history(session_id: SessionIdPath, client: Client) -> WireJSONResponse:
    """Every Step execution, in order, with its status, attempts and error."""
    steps = await client.get_step_history(session_id)
    return WireJSONResponse([s.model_dump(mode="json") for s in steps])


@router.get("/workers", response_model=list[WorkerInfo], summary="The Workers", tags=["workers"])
async def list_workers(client: Client) -> WireJSONResponse:
    """The Workers sharing the database, as their liveness rows show them."""
    workers = await client.list_workers()
    return WireJSONResponse([w.model_dump(mode="json") for w in workers])
