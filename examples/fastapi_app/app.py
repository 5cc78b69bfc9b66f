"""A FastAPI app that runs its dex-agents Worker in-process and serves agent sessions over HTTP.

    POST /sessions                {"message": ...}: starts a session, returns its first turn
    POST /sessions/{id}/messages  {"message": ...}: runs one more turn, returns it
    GET  /sessions/{id}           the session's status and messages

Run it (see README.md): `uvicorn app:app`.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from dex_agents import (
    AgentClient,
    AgentSessionFlow,
    InvalidInputError,
    SessionNotFoundError,
    TurnResult,
    Worker,
)
from dex_agents.stepwise import AgentDefinition, StepwiseRunner, tool

# The agent: a Stepwise agent with one read tool. Any dex-agents flow works the same way.

STORES = {"lyon": "9:00-19:00, closed on Sunday", "paris": "8:00-20:00, every day"}


@tool(effect="read")
def opening_hours(city: str) -> str:
    """The opening hours of our store in a city.

    Args:
        city: The city's name.
    """
    return STORES.get(city.lower(), "we have no store there")


agent = AgentDefinition(
    name="StoreAssistant",
    instructions="You answer questions about our stores. Be brief.",
    tools=[opening_hours],
    # Any LiteLLM model string; "openai/..." follows OPENAI_BASE_URL and OPENAI_API_KEY.
    model=os.environ.get("LITELLM_MODEL", "openai/gpt-5-mini"),
)
FLOW_TYPE = "StoreAssistant"
flows = [AgentSessionFlow(StepwiseRunner(agent), flow_type=FLOW_TYPE)]


# The app: the Worker lives as long as the app does.


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    # Start-up waits until the Worker takes Steps; shutdown lets running model and tool calls
    # finish first. Worker and client share the database: DEX_AGENTS_DATABASE_URL, or the
    # SQLite file dex_agents.sqlite in the working directory. Several app processes may share
    # one Postgres database: a session goes on in whichever one is alive.
    async with Worker(flows), AgentClient() as client:
        app.state.client = client
        yield


app = FastAPI(title="Store assistant", lifespan=lifespan)


def get_client(request: Request) -> AgentClient:
    client: AgentClient = request.app.state.client
    return client


Client = Annotated[AgentClient, Depends(get_client)]


class NewMessage(BaseModel):
    message: str


class Turn(BaseModel):
    session_id: str
    turn_id: str
    status: str  # completed, failed, steered, cancelled or waiting_for_interrupts
    answer: str | None
    error: str | None

    @classmethod
    def of(cls, result: TurnResult) -> Turn:
        return cls(
            session_id=result.session_id,
            turn_id=result.turn_id,
            status=result.status,
            answer=result.text,
            error=result.error,
        )


class Message(BaseModel):
    role: str
    text: str | None
    tool_name: str | None


class Session(BaseModel):
    session_id: str
    status: str | None  # waiting_for_user_message, running, ...; None until the session starts
    turn_count: int
    messages: list[Message]


@app.post("/sessions")
async def start_session(body: NewMessage, client: Client) -> Turn:
    # One call starts the session and waits for its first turn's outcome (woken by the
    # Worker's commits, no polling). The turn goes on even if this request is cut off.
    result = await client.start_session_and_wait(FLOW_TYPE, body.message, timeout=120)
    return Turn.of(result)


@app.post("/sessions/{session_id}/messages")
async def send_message(session_id: str, body: NewMessage, client: Client) -> Turn:
    # A message sent while a turn runs waits in the session's queue: run_turn then returns
    # the outcome of the turn this message begins.
    result = await client.run_turn(session_id, body.message, timeout=120)
    return Turn.of(result)


@app.get("/sessions/{session_id}")
async def get_session(session_id: str, client: Client) -> Session:
    snapshot = await client.get_agent_snapshot(session_id)
    return Session(
        session_id=session_id,
        status=snapshot.state.status if snapshot.state else None,
        turn_count=snapshot.state.turn_count if snapshot.state else 0,
        messages=[
            Message(role=m.role, text=m.text, tool_name=m.tool_name) for m in snapshot.messages
        ],
    )


@app.exception_handler(SessionNotFoundError)
async def session_not_found(request: Request, error: SessionNotFoundError) -> JSONResponse:
    return JSONResponse({"detail": str(error)}, status_code=404)


@app.exception_handler(InvalidInputError)  # a blank message, an ID with control characters, ...
async def invalid_input(request: Request, error: InvalidInputError) -> JSONResponse:
    return JSONResponse({"detail": str(error)}, status_code=422)
