"""What the routers share: the application's AgentClient and its settings."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from ..client import AgentClient


def get_client(request: Request) -> AgentClient:
    client: AgentClient = request.app.state.dex_client
    return client


def get_heartbeat_seconds(request: Request) -> float:
    seconds: float = request.app.state.dex_heartbeat_seconds
    return seconds


Client = Annotated[AgentClient, Depends(get_client)]
HeartbeatSeconds = Annotated[float, Depends(get_heartbeat_seconds)]
