"""Waits and readers for tests that watch a session through an `AgentClient`."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from ..client import AgentClient
from ..types import AgentSnapshot


def turns_done(count: int) -> Callable[[AgentSnapshot], bool]:
    """The session finished `count` turns and waits for the next message."""
    return lambda s: (
        s.state is not None
        and s.state.turn_count >= count
        and s.state.status == "waiting_for_user_message"
    )


def pending_interrupt(interrupt_id: str) -> Callable[[AgentSnapshot], bool]:
    """The session waits for the interrupt `interrupt_id` (a tool call's ID for approvals)."""
    return lambda s: any(i.interrupt_id == interrupt_id for i in s.pending_interrupts)


async def step_types(client: AgentClient, session_id: str) -> list[str]:
    """The session's Step types, in the order of its Step history."""
    return [step.step_type for step in await client.get_step_history(session_id)]


async def events_of(client: AgentClient, session_id: str, type: str) -> list[dict[str, Any]]:
    """The payloads of the session's events of one type, in order."""
    events = await client.read_events(session_id)
    return [json.loads(e.payload) for e in events if e.type == type]


def wait_until(condition: Callable[[], bool], timeout: float = 30.0, what: str = "") -> None:
    """Polls `condition` (every 10 ms) until it holds; TimeoutError after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what or condition}")
        time.sleep(0.01)
