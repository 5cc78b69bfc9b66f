"""The names by which Step workflows are found: the driver's DBOS name and version, the
queue of each flow type, and the workflow IDs of a Step execution and of its wakes.

Kept apart from the driver (runtime.py) because a process that only enqueues Steps (a
client, a commit that wakes a parked Step) needs the names and none of the engine.
"""

from __future__ import annotations

# Pinned as the DBOS application version: a deploy that keeps the driver keeps recovering
# the sessions that were in flight, whatever else changed in the application.
DRIVER_VERSION = "dex-agents-driver-1"
STEP_WORKFLOW = "dex_agents.run_step"
# Steps of one flow type go through the queue of that flow type, so a Worker takes only the
# Steps of the flows it hosts. `STEP_QUEUE` is the one queue of databases written before.
STEP_QUEUE = "dex_agents_steps"


def step_queue_name(flow_type: str) -> str:
    """The DBOS queue of one flow type's Steps."""
    return f"{STEP_QUEUE}:{flow_type}"


def step_workflow_id(session_id: str, step_execution_id: str) -> str:
    return f"{session_id}/{step_execution_id}"


def wake_workflow_id(session_id: str, step_execution_id: str, wake: int) -> str:
    """The workflow of a parked Step's `wake`-th wake: DBOS workflow IDs are idempotency
    keys, so each wake needs its own."""
    return f"{step_workflow_id(session_id, step_execution_id)}#{wake}"
