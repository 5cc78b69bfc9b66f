"""The AI SDK UI message stream: one turn per response, for `useChat`."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
