"""The examples of examples/ that need only the core run as their READMEs say: each in a
process of its own (its Worker inside it), its model the scripted server replying from the
example's script.json, its sessions in a fresh SQLite file. The tests check what the example
printed or answered over HTTP, what the model was sent, and the Step history."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

from dex_agents import AgentClient
from dex_agents.testing import ScriptedModelServer
from dex_agents.testing.model_server import load_script

from .helpers import tool_messages

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"


def example_env(model: ScriptedModelServer, database_url: str) -> dict[str, str]:
    """The environment the READMEs' offline runs set: the scripted model, and a database."""
    env = {k: v for k, v in os.environ.items() if k not in ("LITELLM_MODEL", "OPENAI_MODEL")}
    env.update(
        OPENAI_BASE_URL=model.base_url,
        OPENAI_API_KEY="scripted",
        DEX_AGENTS_DATABASE_URL=database_url,
    )
    return env


def at(text: str | None) -> datetime:
    assert text is not None
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


async def test_the_stepwise_assistant_waits_asks_and_answers(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    example = EXAMPLES / "stepwise_assistant"
    model.enqueue(*load_script(str(example / "script.json")))
    database_url = f"sqlite:///{tmp_path / 'example.sqlite'}"

    run = subprocess.run(
        [sys.executable, str(example / "assistant.py")],
        cwd=tmp_path,
        env=example_env(model, database_url),
        input="#releases\n",  # the answer to the ask_user question
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert run.returncode == 0, run.stderr
    steps = [
        "StartAgentSession",
        *("RunModel", "CallTool", "ResumeTurn"),  # check_build: running
        *("RunModel", "AwaitTimer", "ResumeTurn"),  # durable_wait
        *("RunModel", "CallTool", "ResumeTurn"),  # check_build: passed
        *("RunModel", "AwaitQuestionAnswer", "ResumeTurn"),  # ask_user
        *("RunModel", "AwaitUserMessage"),
    ]
    assert run.stdout.splitlines() == [
        "Build 1234 passed. Where should I announce it? (#releases / #general) > "
        '[completed] Build 1234 is green. For #releases: "Build 1234 passed all checks and is '
        'ready to ship."',
        "Steps: " + " -> ".join(steps),
    ]
    # The read tool ran once per call, and the model saw each result in turn.
    assert tool_messages(model, 1) == {"call-1": '{"build_id":"1234","status":"running"}'}
    assert json.loads(tool_messages(model, 2)["call-2"])["status"] == "completed"
    assert tool_messages(model, 3)["call-3"] == '{"build_id":"1234","status":"passed"}'
    assert json.loads(tool_messages(model, 4)["call-4"]) == {
        "status": "answered",
        "answer": "#releases",
    }
    # The durable timer held the turn for the second the model asked for.
    async with AgentClient(database_url) as client:
        [session] = await client.list_sessions()
        history = await client.get_step_history(session.session_id)
    waited = history[4], history[5]
    assert [s.step_type for s in waited] == ["RunModel", "AwaitTimer"]
    assert (at(waited[1].started_at) - at(waited[0].ended_at)).total_seconds() >= 0.9
