"""Small assertions and waits shared by the integration tests."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from dex_agents import AgentClient
from dex_agents.testing import ScriptedModelServer
from dex_agents.types import AgentSnapshot

# A turn whose single-attempt write was cut off: the write's outcome is recorded as unknown.
OUTCOME_UNKNOWN_TURN = [
    "StartAgentSession",
    "RunModel",
    "CallSingleAttemptTool",
    "ResumeTurn",
    "RecordToolOutcomeUnknown",
    "RunModel",
    "AwaitUserMessage",
]


def turns_done(count: int) -> Callable[[AgentSnapshot], bool]:
    """The session finished `count` turns and waits for the next message."""
    return lambda s: (
        s.state is not None
        and s.state.turn_count >= count
        and s.state.status == "waiting_for_user_message"
    )


def pending_interrupt(interrupt_id: str) -> Callable[[AgentSnapshot], bool]:
    return lambda s: any(i.interrupt_id == interrupt_id for i in s.pending_interrupts)


async def step_types(client: AgentClient, session_id: str) -> list[str]:
    return [step.step_type for step in await client.get_step_history(session_id)]


async def events_of(client: AgentClient, session_id: str, type: str) -> list[dict[str, Any]]:
    events = await client.read_events(session_id)
    return [json.loads(e.payload) for e in events if e.type == type]


def tool_messages(model: ScriptedModelServer, request_index: int) -> dict[str, str]:
    """The tool results the model saw in one request, by tool call ID."""
    body = model.requests[request_index].body
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}


def wait_until(condition: Callable[[], bool], timeout: float = 30.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what or condition}")
        time.sleep(0.01)


# DBOS's terminal workflow statuses other than success: a Step workflow left in one of these
# would strand its session.
FAILED_WORKFLOW_STATUSES = {"ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"}


def step_workflows(database_url: str, session_id: str) -> dict[str, str]:
    """The DBOS status of every Step workflow of a session, by workflow ID."""
    from dbos import DBOSClient

    from dex_agents.db import create_dbos_engine

    dbos_client = DBOSClient(system_database_engine=create_dbos_engine(database_url))
    try:
        found = dbos_client.list_workflows(
            workflow_id_prefix=f"{session_id}/", load_input=False, load_output=False
        )
        return {w.workflow_id: w.status for w in found}
    finally:
        dbos_client.destroy()


def no_failed_workflows(database_url: str, session_id: str) -> bool:
    statuses = step_workflows(database_url, session_id)
    return bool(statuses) and not FAILED_WORKFLOW_STATUSES & set(statuses.values())
