"""Small assertions and waits shared by the integration tests."""

from __future__ import annotations

from dex_agents.testing import ScriptedModelServer
from dex_agents.testing.sessions import (  # noqa: F401 (the core tests import them from here)
    events_of,
    pending_interrupt,
    step_types,
    turns_done,
    wait_until,
)

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


def tool_messages(model: ScriptedModelServer, request_index: int) -> dict[str, str]:
    """The tool results the model saw in one request, by tool call ID."""
    body = model.requests[request_index].body
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}


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
