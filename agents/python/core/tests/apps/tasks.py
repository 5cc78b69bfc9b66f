"""A Worker app whose tools start remote tasks and ask questions, for steering tests.

A task's state lives in a JSON file the test writes ({"<task_id>": "running" | "done"}),
so the test decides when remote work finishes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from dex_agents import (
    AgentSessionFlow,
    AgentSessionOptions,
    ToolExecutionResult,
    ToolInputRequested,
    ToolPolicy,
    ToolTaskPending,
    ToolTaskStarted,
)
from dex_agents.runner import ToolTaskCancellation, ToolTaskPoll, ToolTaskPollOutcome
from dex_agents.testing import ScriptedRunner, ToolRunLog, current_tool_execution

LOG = ToolRunLog(os.environ.get("TOOL_LOG", "/tmp/dex-agents-tool-log.jsonl"))
TASKS = Path(os.environ.get("TASKS_FILE", "/tmp/dex-agents-tasks.json"))


def _tasks() -> dict[str, str]:
    return json.loads(TASKS.read_text()) if TASKS.exists() else {}


async def start_job(name: str) -> ToolTaskStarted:
    """Starts remote work and returns its handle; a retry returns the saved handle."""
    execution = current_tool_execution()
    if execution.heartbeat_checkpoint:
        return ToolTaskStarted(execution.heartbeat_checkpoint, 1)
    task_id = f"job-{name}"
    await execution.save_heartbeat_checkpoint(task_id)
    LOG.record("start_job", task_id=task_id)
    return ToolTaskStarted(task_id, 0.4)


def delete_files(path: str) -> ToolInputRequested | str:
    """Asks for confirmation before it takes any effect."""
    answers = current_tool_execution().input_answers
    if not answers:
        return ToolInputRequested("Delete everything under this path?", ("yes", "no"), False)
    LOG.record("delete_files", answer=answers[-1].answer)
    return f"deleted {path}" if answers[-1].answer == "yes" else "kept the files"


def send_email(to: str, body: str) -> str:
    """A write that needs approval."""
    LOG.record("send_email", to=to)
    return f"sent to {to}"


def get_weather(city: str) -> dict[str, str]:
    """A read."""
    LOG.record("get_weather", city=city)
    return {"city": city, "forecast": "sunny"}


class TaskRunner(ScriptedRunner):
    async def poll_tool_task(self, poll: ToolTaskPoll) -> ToolTaskPollOutcome:
        task_id = poll.tool_call.task_id or ""
        LOG.record("poll", task_id=task_id)
        if _tasks().get(task_id) == "done":
            return ToolExecutionResult(f"{task_id} finished")
        return ToolTaskPending(0.3)

    async def cancel_tool_task(self, cancellation: ToolTaskCancellation) -> None:
        LOG.record("cancel_task", task_id=cancellation.tool_call.task_id)


flows = [
    AgentSessionFlow(
        TaskRunner([start_job, delete_files, send_email, get_weather]),
        flow_type="Tasks",
        options=AgentSessionOptions(
            tool_policies={
                "start_job": ToolPolicy(effect="idempotent_write"),
                "delete_files": ToolPolicy(effect="non_idempotent_write", requires_approval=False),
                "send_email": ToolPolicy(effect="non_idempotent_write"),
                "get_weather": ToolPolicy(effect="read"),
            }
        ),
    )
]
