"""The ASGI application: `create_app()`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from ..client import AgentClient
from . import api, chat


def create_app(database_url: str | None = None, *, client: AgentClient | None = None) -> FastAPI:
    """The web application over the sessions in `database_url` (default: as AgentClient's).
    Pass `client` to share an AgentClient the application already has; it is not closed."""
    owned = client is None
    agent_client = client if client is not None else AgentClient(database_url)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if owned:
                await agent_client.close()

    app = FastAPI(title="dex-agents", lifespan=lifespan)
    app.state.dex_client = agent_client
    app.include_router(api.router, prefix="/api")
    app.include_router(chat.router, prefix="/api")
    return app
