"""The examples of examples/ that need only the core run as their READMEs say: each in a
process of its own (its Worker inside it), its model the scripted server replying from the
example's script.json, its sessions in a fresh SQLite file. The tests check what the example
printed or answered over HTTP, what the model was sent, and the Step history."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import httpx

from dex_agents import AgentClient
from dex_agents.testing import ScriptedModelServer
from dex_agents.testing.model_server import load_script
from dex_agents.testing.processes import run_example, scripted_model_env

from .helpers import tool_messages

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"


def at(text: str | None) -> datetime:
    assert text is not None
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


async def test_the_stepwise_assistant_waits_asks_and_answers(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    example = EXAMPLES / "stepwise_assistant"
    model.enqueue(*load_script(str(example / "script.json")))
    database_url = f"sqlite:///{tmp_path / 'example.sqlite'}"

    run = run_example(
        example / "assistant.py",
        model_url=model.base_url,
        database_url=database_url,
        cwd=tmp_path,
        input="#releases\n",  # the answer to the ask_user question
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
    assert (at(waited[1].ended_at) - at(waited[1].started_at)).total_seconds() >= 0.9


def test_the_fastapi_app_serves_sessions_over_http(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    example = EXAMPLES / "fastapi_app"
    model.enqueue(*load_script(str(example / "script.json")))
    database_url = f"sqlite:///{tmp_path / 'example.sqlite'}"
    log_path = tmp_path / "uvicorn.log"
    command = [sys.executable, "-m", "uvicorn", "app:app", "--host", "127.0.0.1", "--port", "0"]
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            command,
            cwd=example,
            env=scripted_model_env(model.base_url, database_url),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        base_url = wait_for_uvicorn(server, log_path)
        with httpx.Client(base_url=base_url, timeout=120) as http:
            first = http.post("/sessions", json={"message": "When does the Lyon store open?"})
            session_id = first.json()["session_id"]
            second = http.post(
                f"/sessions/{session_id}/messages", json={"message": "Is Paris open on Sunday?"}
            )
            session = http.get(f"/sessions/{session_id}")
            unknown = http.get("/sessions/no-such-session")
            blank = http.post(f"/sessions/{session_id}/messages", json={"message": " "})
    finally:
        server.send_signal(signal.SIGTERM)  # the lifespan stops the Worker cleanly
        returncode = server.wait(timeout=60)

    log = log_path.read_text()
    # uvicorn shuts down on SIGTERM, then ends itself by the same signal (newer versions).
    assert returncode in (0, -signal.SIGTERM), log
    assert "Application shutdown complete." in log
    assert (first.status_code, second.status_code) == (200, 200)
    assert first.json() == {
        "session_id": session_id,
        "turn_id": "turn-1",
        "status": "completed",
        "answer": "The Lyon store opens at 9:00 and closes at 19:00; it is closed on Sunday.",
        "error": None,
    }
    assert second.json() == {
        "session_id": session_id,
        "turn_id": "turn-2",
        "status": "completed",
        "answer": "Yes: the Paris store opens every day, Sunday included, from 8:00 to 20:00.",
        "error": None,
    }
    assert session.json()["status"] == "waiting_for_user_message"
    assert session.json()["turn_count"] == 2
    assert [(m["role"], m["tool_name"]) for m in session.json()["messages"]] == [
        ("user", None),
        ("assistant", "opening_hours"),
        ("tool", "opening_hours"),
        ("assistant", None),
        ("user", None),
        ("assistant", None),
    ]
    assert tool_messages(model, 1) == {"call-1": "9:00-19:00, closed on Sunday"}
    assert (unknown.status_code, blank.status_code) == (404, 422)


def wait_for_uvicorn(server: subprocess.Popen[bytes], log_path: Path) -> str:
    """The app's URL, once its lifespan has started (the Worker takes Steps)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        log = log_path.read_text()
        found = re.search(r"Uvicorn running on (http://127\.0\.0\.1:\d+)", log)
        if found and "Application startup complete." in log:
            return found.group(1)
        if server.poll() is not None:
            raise RuntimeError(f"uvicorn exited with {server.returncode}:\n{log}")
        time.sleep(0.05)
    raise TimeoutError(f"uvicorn did not start in 60 s:\n{log_path.read_text()}")
