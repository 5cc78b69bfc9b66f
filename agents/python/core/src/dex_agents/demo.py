"""`dex-agents demo`: one durable agent session on the SQLite default, offline.

A scripted model server stands in for the model, so no key is needed. The demo runs a read
tool, waits for an approval, kills the Worker with SIGKILL while the approval waits,
restarts it, approves, and prints the transcript and the Step history: the write ran once.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from .cli_format import compact_json
from .client import SyncAgentClient
from .flow import AgentSessionFlow, AgentSessionOptions
from .runner import ToolPolicy
from .testing import (
    MODEL_URL_ENV,
    ScriptedModelServer,
    ToolRunLog,
    WorkerProcess,
    current_tool_execution,
    reply_text,
    reply_tools,
)
from .testing.scripted_runner import ScriptedRunner
from .types import AgentSnapshot

FLOW_TYPE = "DemoAssistant"
TOOL_LOG_ENV = "DEX_AGENTS_DEMO_TOOL_LOG"


def _log() -> ToolRunLog:
    return ToolRunLog(
        os.environ.get(TOOL_LOG_ENV, os.path.join(tempfile.gettempdir(), "demo.jsonl"))
    )


def get_weather(city: str) -> dict[str, object]:
    """Today's weather for a city (a read)."""
    _log().record("get_weather", city=city)
    return {"city": city, "celsius": 22, "sky": "sunny"}


def send_email(to: str, body: str) -> str:
    """Sends an email (a non-idempotent write: it needs approval and runs at most once)."""
    _log().record("send_email", to=to, key=current_tool_execution().idempotency_key)
    return f"email to {to} sent"


flows = [
    AgentSessionFlow(
        ScriptedRunner([get_weather, send_email], instructions="You are a concise assistant."),
        flow_type=FLOW_TYPE,
        options=AgentSessionOptions(
            tool_policies={
                "get_weather": ToolPolicy(effect="read"),
                "send_email": ToolPolicy(effect="non_idempotent_write"),
            }
        ),
    )
]


def _script(model: ScriptedModelServer) -> None:
    model.enqueue(
        reply_tools(("call_weather", "get_weather", {"city": "Lisbon"})),
        reply_text("It is 22 °C and sunny in Lisbon."),
        reply_tools(
            ("call_email", "send_email", {"to": "ana@example.com", "body": "Lisbon: 22 °C, sunny"})
        ),
        reply_text("Done: Ana has the forecast."),
    )


def _wait(
    client: SyncAgentClient, session: str, ready: Callable[[AgentSnapshot], bool]
) -> AgentSnapshot:
    return client.wait_for(session, ready, timeout=60)


def _idle(turns: int) -> Callable[[AgentSnapshot], bool]:
    return lambda s: (
        s.state is not None
        and s.state.turn_count >= turns
        and s.state.status == "waiting_for_user_message"
    )


def _plain_hint(*args: str) -> str:
    return " ".join(["dex-agents", *args])


def run_demo(
    database_url: str,
    say: Callable[[str], None] = print,
    hint: Callable[..., str] = _plain_hint,
) -> None:
    """Runs the demo on `database_url`; `hint(*args)` is the command line that runs the
    `dex-agents` command `args` on the same database, as the user can type it."""
    tool_log = ToolRunLog(Path(tempfile.mkdtemp()) / "tools.jsonl")
    with ScriptedModelServer() as model:
        _script(model)
        worker = WorkerProcess(
            "dex_agents.demo:flows",
            database_url=database_url,
            env={MODEL_URL_ENV: model.base_url, TOOL_LOG_ENV: str(tool_log.path)},
        )
        client = SyncAgentClient(database_url)
        try:
            say(f"Starting a Worker on {database_url} …")
            worker.start()
            session = client.start_session(FLOW_TYPE, "What's the weather in Lisbon?")
            say(f"Session {session}\n\nuser: What's the weather in Lisbon?")
            snapshot = _wait(client, session, _idle(1))
            say(f"assistant: {snapshot.messages[-1].text}")

            client.send_user_message(session, "Email Ana the forecast.")
            say("user: Email Ana the forecast.")
            snapshot = _wait(client, session, lambda s: bool(s.pending_interrupts))
            interrupt = snapshot.pending_interrupts[0]
            arguments = compact_json(interrupt.arguments)
            say(f"\n[approval] {interrupt.tool_name} {arguments} waits for approval.")
            say("[crash] SIGKILL to the Worker while the approval waits …")
            worker.kill()
            time.sleep(0.5)
            worker.start()
            say("[recover] Worker restarted; the session is where it stood. Approving …")
            client.resolve_interrupt(session, interrupt.interrupt_id, True)
            snapshot = _wait(client, session, _idle(2))
            say(f"assistant: {snapshot.messages[-1].text}\n")

            history = client.get_step_history(session)
            say("Step history: " + " -> ".join(step.step_type for step in history))
            say(
                f"send_email ran {tool_log.count('send_email')} time(s); get_weather ran "
                f"{tool_log.count('get_weather')} time(s)."
            )
            say(f"\nInspect it: {hint('history', session)}   (and: snapshot, events, messages)")
        finally:
            worker.stop()
            client.close()
