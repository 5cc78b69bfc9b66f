"""The session API: one endpoint per RPC, the snapshot with its resume token, Step history,
and a session's events as Server-Sent Events."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
