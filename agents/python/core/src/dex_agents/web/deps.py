"""What the routers share: the application's AgentClient."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from ..client import AgentClient


def get_client(request: Request) -> AgentClient:
    client: AgentClient = request.app.state.dex_client
    return client


Client = Annotated[AgentClient, Depends(get_client)]
