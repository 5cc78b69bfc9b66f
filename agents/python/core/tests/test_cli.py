"""The `dex-agents` CLI against a real database and a real Worker process."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sqlalchemy.engine import make_url

from dex_agents import AgentClient, FlowTypeNotHostedWarning
from dex_agents.cli import cli
from dex_agents.db import Database
from dex_agents.testing import ScriptedReply, reply_text, reply_tools
from dex_agents.testing.fixtures import POSTGRES_URL
from dex_agents.types import AgentEvent, AgentMessagesPage, AgentSnapshot

SESSION = "cli-demo"


def run(database_url: str, *args: str, exit_code: int = 0) -> Result:
    """One CLI command; the database comes from the environment, as a user would set it."""
    result = CliRunner().invoke(cli, list(args), env={"DEX_AGENTS_DATABASE_URL": database_url})
    assert result.exit_code == exit_code, (result.output, result.stderr, result.exception)
    return result


def snapshot_of(database_url: str, session_id: str = SESSION) -> AgentSnapshot:
    return AgentSnapshot.model_validate_json(
        run(database_url, "snapshot", session_id, "--json").stdout
    )


def wait_for(
    database_url: str, predicate: Callable[[AgentSnapshot], bool], timeout: float = 60.0
) -> AgentSnapshot:
    deadline = time.monotonic() + timeout
    while True:
        snapshot = snapshot_of(database_url)
        if predicate(snapshot):
            return snapshot
        assert time.monotonic() < deadline, f"timed out; last snapshot: {snapshot}"
        time.sleep(0.1)


def turn_done(snapshot: AgentSnapshot) -> bool:
    state = snapshot.state
    return (
        state is not None and state.turn_count == 1 and state.status == "waiting_for_user_message"
    )


def test_cli_drives_a_session_through_an_approval(make_worker, model, database_url, tool_log):
    model.enqueue(
        reply_tools(
            ("r1", "get_weather", {"city": "Paris"}),
            ("w1", "send_email", {"to": "ana@example.com", "body": "Sunny in Paris."}),
        ),
        reply_text("Sent: it is sunny in Paris.\nAnything else?"),
    )
    with make_worker():
        started = run(database_url, "start", "Assistant", "Weather in Paris, email Ana.",
                      "--session-id", SESSION)  # fmt: skip
        assert started.stdout == f"{SESSION}\n"
        wait_for(
            database_url,
            lambda s: (
                bool(s.pending_interrupts)
                and any(c.tool_call_id == "r1" and c.status == "succeeded" for c in s.tool_calls)
            ),
        )
        _check_pending_approval(database_url)
        assert run(database_url, "approve", SESSION, "w1").stdout.startswith("approved w1")
        wait_for(database_url, turn_done)

    again = run(database_url, "approve", SESSION, "w1", exit_code=1)
    assert again.stderr == (
        "error: interrupt w1 is not pending (already resolved, or its deadline passed); "
        "pending: none\n"
    )
    assert tool_log.count("send_email") == 1
    _check_history(database_url)
    _check_messages(database_url)
    _check_events(database_url)
    _check_finished_snapshot(database_url)


def _check_pending_approval(database_url: str) -> None:
    out = run(database_url, "snapshot", SESSION).stdout
    # The contract's status stays running_tools: the session waits on a person.
    assert "status       waiting for approval (status running_tools)" in out
    assert "active turn  turn-1" in out
    assert "usage        1 model call, 10 input tokens" in out
    assert "Pending interrupts (1)" in out
    row = next(line for line in out.splitlines() if line.startswith("w1 "))  # the interrupt
    assert row.split()[:3] == ["w1", "tool_approval", "send_email"]
    assert '{"to":"ana@example.com","body":"Sunny in Paris."}' in row
    assert row.endswith("none")  # no deadline
    assert f"dex-agents approve {SESSION} w1" in out
    assert "Tool calls of turn-1 (2)" in out
    assert _row(out, "r1")[:4] == ["r1", "get_weather", "read", "succeeded"]
    call = ["w1", "send_email", "non_idempotent_write", "awaiting_approval"]
    assert _row(out, "w1", skip=1)[:4] == call
    assert "Queued messages: none" in out
    assert "Last message\n" in out
    assert _transcript(out) == [["#1", "user", "Weather in Paris, email Ana."]]

    sessions = run(database_url, "sessions").stdout.splitlines()
    assert sessions[0].split() == ["SESSION", "ID", "FLOW", "TYPE", "STATUS", "TURNS", "ACTIVE",
                                   "TURN", "CREATED"]  # fmt: skip
    assert sessions[1].split()[:7] == [SESSION, "Assistant", "waiting", "for", "approval", "0",
                                       "turn-1"]  # fmt: skip
    listed = json.loads(run(database_url, "sessions", "--json").stdout)
    assert (listed[0]["status"], listed[0]["waiting_for"]) == ("running_tools", "approval")
    assert snapshot_of(database_url).waiting_for == "approval"


def _row(out: str, first: str, skip: int = 0) -> list[str]:
    rows = [line.split() for line in out.splitlines() if line.startswith(first + " ")]
    return rows[skip]


def _transcript(out: str) -> list[list[str]]:
    """The rows of a messages table: `#sequence`, role, and the message's first line."""
    return [line.split(None, 2) for line in out.splitlines() if re.match(r"#\d+ ", line)]


def _check_history(database_url: str) -> None:
    lines = run(database_url, "history", SESSION).stdout.splitlines()
    assert lines[0] == (
        "StartAgentSession -> RunModel -> CallTool -> AwaitToolApproval -> ResumeTurn -> "
        "CallSingleAttemptTool -> RunModel -> AwaitUserMessage"
    )
    assert lines[1] == ""
    assert lines[2].split() == ["#", "STEP", "EXECUTION", "TYPE", "STATUS", "ATTEMPTS", "STARTED",
                                "DURATION", "ERROR"]  # fmt: skip
    first, last = lines[3].split(), lines[-1].split()
    assert first[:5] == ["1", "StartAgentSession-1", "StartAgentSession", "succeeded", "1"]
    assert first[-2].endswith(("ms", "s")) and first[-1] == "-"
    # Waiting in the Worker, or parked once its hot window passed (or the Worker stopped):
    # started when it began waiting, and how long it has waited so far.
    assert last[3] in ("waiting", "parked")
    assert [*last[:3], last[4]] == ["8", "AwaitUserMessage-8", "AwaitUserMessage", "0"]
    assert re.fullmatch(r"\d\d:\d\d:\d\d\.\d{3}", last[6]), last
    assert last[-3:] == ["so", "far", "-"] and last[-4].endswith(("ms", "s"))

    steps = json.loads(run(database_url, "history", SESSION, "--json").stdout)
    assert [s["step_execution_id"] for s in steps][:2] == ["StartAgentSession-1", "RunModel-2"]
    # The approval's Step started when it began waiting and lasted as long as the wait; the
    # history lists the Steps in the order they were scheduled, each started once scheduled.
    approval = next(s for s in steps if s["step_type"] == "AwaitToolApproval")
    assert approval["started_at"] == approval["scheduled_at"]
    assert approval["ended_at"] > approval["started_at"]
    scheduled = [s["scheduled_at"] for s in steps]
    assert scheduled == sorted(scheduled)
    assert all(s["started_at"] >= s["scheduled_at"] for s in steps)


def _check_messages(database_url: str) -> None:
    out = run(database_url, "messages", SESSION).stdout
    assert out.splitlines()[:2] == [
        "(from the first message)",
        "#   ROLE       MESSAGE",
    ]
    rows = _transcript(out)
    assert rows[0] == ["#1", "user", "Weather in Paris, email Ana."]
    assert rows[1][:2] == ["#2", "assistant"]  # two tool calls, no display text
    assert rows[2:] == [
        ["#3", "tool", 'get_weather [r1] returned {"city":"Paris","forecast":"sunny"}'],
        ["#4", "tool", "send_email [w1] returned sent to ana@example.com"],
        ["#5", "assistant", "Sent: it is sunny in Paris. Anything else?"],
    ]
    assert "#1  user       Weather in Paris, email Ana.\n" in out  # the columns line up

    # Oldest first: the way to earlier messages stands above them.
    page = run(database_url, "messages", SESSION, "--limit", "2").stdout
    assert page.splitlines()[0] == (
        f"(earlier messages: dex-agents messages {SESSION} --before 4 --limit 2)"
    )
    assert [row[0] for row in _transcript(page)] == ["#4", "#5"]
    older = run(database_url, "messages", SESSION, "--before", "4", "--limit", "2").stdout
    assert [row[0] for row in _transcript(older)] == ["#2", "#3"]

    # --full: the whole text, its lines wrapped in the message column.
    full = run(database_url, "messages", SESSION, "--before", "6", "--limit", "1", "--full").stdout
    assert full.splitlines()[2:] == [
        "#5  assistant  Sent: it is sunny in Paris.",
        "               Anything else?",
    ]
    page_json = run(database_url, "messages", SESSION, "--json").stdout
    assert len(AgentMessagesPage.model_validate_json(page_json).messages) == 5


def _check_events(database_url: str) -> None:
    out = run(database_url, "events", SESSION).stdout.splitlines()
    assert out[0].split() == ["OFFSET", "TYPE", "TURN", "STEP", "EXECUTION", "ATTEMPT", "PAYLOAD"]
    assert out[1].split() == [
        "1",
        "turn_started",
        "turn-1",
        "StartAgentSession-1",
        "1",
        "sequence=1",
    ]
    (raised,) = [line for line in out if " interrupt_raised " in line]
    assert "interrupt_id=w1 tool_call_id=w1 tool_name=send_email" in raised
    (resolved,) = [line for line in out if " interrupt_resolved " in line]
    assert "interrupt_id=w1 approved=true" in resolved
    (text,) = [line for line in out if " text_delta " in line]  # the deltas, on one line
    assert '"Sent: it is sunny in Paris.\\nAnything else?"  (' in text and "deltas" in text
    assert out[-1].split()[1:] == ["turn_completed", "turn-1", "RunModel-7", "1", "message_count=4"]

    last = int(out[-1].split()[0])
    tail = run(database_url, "events", SESSION, "--after", str(last - 2), "--json").stdout
    offsets = [AgentEvent.model_validate_json(line).offset for line in tail.splitlines()]
    assert offsets == [last - 1, last]
    assert run(database_url, "events", SESSION, "--after", str(last)).stdout == (
        f"no events after offset {last}\n"
    )


def _check_finished_snapshot(database_url: str) -> None:
    out = run(database_url, "snapshot", SESSION, "--messages", "2").stdout
    assert "status       waiting_for_user_message" in out
    assert "turns        1 completed or failed" in out
    assert "Pending interrupts: none" in out
    assert "Tool calls of the active turn: none" in out
    assert "Last 2 messages\n#   ROLE" in out
    assert [row[:2] for row in _transcript(out)] == [["#4", "tool"], ["#5", "assistant"]]
    assert f"earlier: dex-agents messages {SESSION} --before 4" in out
    assert snapshot_of(database_url).usage.model_calls == 2


def test_cli_rejects_with_a_message_and_sends_a_follow_up(
    make_worker, model, database_url, tool_log
):
    model.enqueue(
        reply_tools(("w1", "send_email", {"to": "bob@example.com", "body": "Hi"})),
        reply_text("Understood, not sent."),
        reply_text("Hello again."),
    )
    with make_worker():
        run(database_url, "start", "Assistant", "Email Bob.", "--session-id", SESSION)
        wait_for(database_url, lambda s: bool(s.pending_interrupts))
        rejected = run(database_url, "reject", SESSION, "w1", "--message", "Not today.")
        assert rejected.stdout.startswith("rejected w1")
        wait_for(database_url, turn_done)
        assert run(database_url, "send", SESSION, "Hi again").stdout == "sent; it starts a turn\n"
        wait_for(database_url, lambda s: s.state is not None and s.state.turn_count == 2)

    assert tool_log.count("send_email") == 0
    transcript = run(database_url, "messages", SESSION).stdout
    assert "send_email [w1] returned Not today." in transcript
    assert _transcript(transcript)[-2:] == [
        ["#5", "user", "Hi again"],
        ["#6", "assistant", "Hello again."],
    ]


def test_events_follow_streams_until_interrupted(make_worker, model, database_url, tool_log):
    model.enqueue(reply_text("Hi there, streaming."))
    with make_worker():
        run(database_url, "start", "Assistant", "Hi", "--session-id", SESSION)
        follow = subprocess.Popen(
            [sys.executable, "-m", "dex_agents", "events", SESSION, "--follow"],
            env={**os.environ, "DEX_AGENTS_DATABASE_URL": database_url},
            cwd=Path(__file__).parent.parent,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            # Ctrl-C as in a terminal, even when these tests run as a background job (which
            # starts with SIGINT ignored, and a child inherits that).
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        try:
            lines = []
            assert follow.stdout is not None
            while not lines or "turn_completed" not in lines[-1]:
                line = follow.stdout.readline()
                assert line, f"the follower ended early: {lines}"
                lines.append(line)
            follow.send_signal(signal.SIGINT)
            _, stderr = follow.communicate(timeout=30)
        finally:
            follow.kill()

    assert follow.returncode == 0, stderr
    assert any('"Hi there, streaming."' in line for line in lines)
    last = lines[-1].split()[0]
    # Started as `python -m dex_agents`, it says to continue the same way.
    python = "python" if shutil.which("python") == sys.executable else sys.executable
    assert stderr.endswith(
        f"stopped after offset {last}; continue with: "
        f"{python} -m dex_agents events {SESSION} --after {last} --follow\n"
    )


def test_cli_errors_are_one_line_with_exit_code_1(database_url: str) -> None:
    Database(database_url).create_schema()  # a database that holds no session yet
    empty = run(database_url, "sessions").stdout
    assert empty.startswith("no sessions in ") and "dex-agents start FLOW_TYPE MESSAGE" in empty

    for command in (["snapshot"], ["history"], ["messages"], ["events"], ["send", "hi"],
                    ["approve", "w1"], ["reject", "w1"]):  # fmt: skip
        failed = run(database_url, command[0], "nope", *command[1:], exit_code=1)
        assert failed.stderr.startswith(
            "error: no agent session 'nope': check the ID with `dex-agents sessions` (database: "
        ), command
        assert failed.stdout == "" and "Traceback" not in failed.output

    # No Worker runs, so the session stays unstarted.
    assert run(database_url, "start", "Assistant", "--session-id", SESSION).stdout == f"{SESSION}\n"
    assert "status       not started" in run(database_url, "snapshot", SESSION).stdout
    duplicate = run(database_url, "start", "Assistant", "--session-id", SESSION, exit_code=1)
    assert duplicate.stderr == f"error: a session with ID '{SESSION}' already exists\n"
    unknown = run(database_url, "reject", SESSION, "w9", exit_code=1)
    assert unknown.stderr == (
        "error: interrupt w9 is not pending (already resolved, or its deadline passed); "
        "pending: none\n"
    )
    blank = run(database_url, "send", SESSION, "   ", exit_code=1)
    assert blank.stderr == "error: the message is blank; nothing was queued (send some text)\n"
    too_large = run(database_url, "send", SESSION, "x" * 1_048_577, exit_code=1)
    assert too_large.stderr.startswith("error: the message is 1,048,577 bytes")

    settings = run(database_url, "start", "Assistant", "--settings", "[1]", exit_code=2)
    assert "must be a JSON object" in settings.stderr


def test_an_unusable_database_is_an_error(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'missing' / 'dex.sqlite'}"
    result = CliRunner().invoke(cli, ["sessions", "--database-url", url])
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: no dex-agents database at {tmp_path / 'missing' / 'dex.sqlite'}: start a "
        "session first, or pass the database your Worker uses (--database-url or "
        "DEX_AGENTS_DATABASE_URL)\n"
    )


def test_answer_steer_cancel_and_unqueue(
    database_url: str, make_worker: Callable[..., Any], model: Any
) -> None:
    model.enqueue(
        reply_tools(("d1", "delete_files", {"path": "/tmp/x"})),
        reply_text("Deleted."),
        ScriptedReply(text="Long answer", hang=True),
    )
    with make_worker("tests.apps.tasks:flows"):
        run(database_url, "start", "Tasks", "Delete /tmp/x", "--session-id", SESSION)
        _wait(lambda: "d1-input-1" in run(database_url, "snapshot", SESSION).stdout)
        question = run(database_url, "snapshot", SESSION).stdout
        assert f"answer with: dex-agents answer {SESSION} d1-input-1 TEXT" in question
        assert "dex-agents approve" not in question
        assert "status       waiting for an answer (status running_tools)" in question
        listed = run(database_url, "sessions").stdout.splitlines()[1].split()
        assert listed[:6] == [SESSION, "Tasks", "waiting", "for", "an", "answer"]
        wrong = run(database_url, "answer", SESSION, "d1-input-1", "maybe", exit_code=1)
        assert "not one of the choices (yes, no)" in wrong.stderr
        assert (
            run(database_url, "answer", SESSION, "d1-input-1", "yes").stdout
            == "answered d1-input-1\n"
        )
        _wait(lambda: "turns        1" in run(database_url, "snapshot", SESSION).stdout)

        nothing = run(database_url, "cancel", SESSION, exit_code=1)
        assert nothing.stderr.startswith("error: no turn of this session is running")
        started = run(database_url, "send", SESSION, "Write a long story").stdout
        assert started == "sent; it starts a turn\n"
        model.wait_for_requests(3)
        queued_behind = run(database_url, "send", SESSION, "queued one").stdout
        assert queued_behind.startswith("queued behind the running turn turn-2 as ")
        queued = json.loads(run(database_url, "snapshot", SESSION, "--json").stdout)
        message_id = queued["queued_messages"][0]["message_id"]
        assert f"steer {SESSION} --queued {message_id} redirects" in queued_behind
        assert run(database_url, "unqueue", SESSION, message_id).stdout.startswith("deleted")
        run(database_url, "unqueue", SESSION, message_id, exit_code=1)
        assert run(database_url, "steer", SESSION, exit_code=1).stderr.startswith(
            "error: nothing was steered"
        )
        assert run(database_url, "cancel", SESSION).stdout.startswith("cancelling")
        model.wait_for_dropped(1)
        _wait(lambda: "turns        2" in run(database_url, "snapshot", SESSION).stdout)
    history = run(database_url, "history", SESSION).stdout.splitlines()[0]
    assert history.endswith(
        "RunModel -> FinishTurnCancellation -> ApplyTurnControl -> AwaitUserMessage"
    )


def _wait(condition: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def test_workers_lists_each_worker_and_its_state(make_worker, database_url):
    worker = make_worker(DEX_AGENTS_WORKER_ID="worker-a").start()
    running = run(database_url, "workers").stdout
    assert running.splitlines()[0].split() == [
        "WORKER", "ID", "STATE", "FLOW", "TYPES", "HOST", "PID", "STARTED", "LAST", "BEAT"
    ]  # fmt: skip
    assert running.splitlines()[1].split()[:3] == ["worker-a", "running", "Assistant"]
    worker.stop()

    (stopped,) = json.loads(run(database_url, "workers", "--json").stdout)
    assert (stopped["worker_id"], stopped["state"], stopped["flow_types"]) == (
        "worker-a",
        "stopped",
        ["Assistant"],
    )


def worker_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "dex_agents", "worker", *args]


def test_a_worker_that_cannot_start_says_why_in_one_line(tmp_path: Path) -> None:
    sqlite = f"sqlite:///{tmp_path / 'dex.sqlite'}"
    cases = {
        ("tests.apps.basic:flows", "--database-url", "nosuchdb://x"): (
            "error: cannot use the database URL nosuchdb://x: Can't load plugin: "
            "sqlalchemy.dialects:nosuchdb; check --database-url or DEX_AGENTS_DATABASE_URL"
        ),
        ("tests.apps.basic:flows", "--database-url", f"sqlite:///{tmp_path}/no/dex.sqlite"): (
            f"error: the directory of the SQLite database {tmp_path}/no/dex.sqlite does not "
            "exist: create it, or pass another --database-url (or DEX_AGENTS_DATABASE_URL)"
        ),
        ("tests.apps.nosuch:flows", "--database-url", sqlite): (
            "error: cannot import 'tests.apps.nosuch' (ModuleNotFoundError: No module named "
            "'tests.apps.nosuch'); check the module path of TARGET and run from the directory "
            "it is relative to"
        ),
        ("tests.apps.basic:LOG", "--database-url", sqlite): (
            "error: tests.apps.basic:LOG is a ToolRunLog, not an AgentSessionFlow or a list of "
            "them; wrap each runner as AgentSessionFlow(runner, flow_type=...)"
        ),
    }
    if POSTGRES_URL:  # a server that answers, without the database named
        missing = POSTGRES_URL.rsplit("/", 1)[0] + "/dex_agents_no_such_database"
        cases[("tests.apps.basic:flows", "--database-url", missing)] = (
            f"error: cannot use the database {missing}: connection failed: connection to server "
            f'at "{make_url(missing).host}", port {make_url(missing).port} failed: FATAL:  '
            'database "dex_agents_no_such_database" does not exist; check --database-url or '
            "DEX_AGENTS_DATABASE_URL"
        )
    for args, message in cases.items():
        failed = subprocess.run(worker_command(*args), capture_output=True, text=True, timeout=60)
        assert (failed.returncode, failed.stdout, failed.stderr) == (1, "", message + "\n"), args

    debug = subprocess.run(
        worker_command("tests.apps.basic:LOG", "--database-url", sqlite, "--debug"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert debug.returncode == 1
    assert "Traceback" in debug.stderr and "FlowLoadError: tests.apps.basic:LOG" in debug.stderr


def test_a_worker_waits_for_an_unreachable_database_with_one_line(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    log_path = tmp_path / "worker.log"
    with open(log_path, "wb") as log:
        worker = subprocess.Popen(
            worker_command(
                "tests.apps.basic:flows",
                "--database-url",
                f"postgresql://postgres@127.0.0.1:{closed_port}/dex",
            ),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while "retrying" not in log_path.read_text():
            assert worker.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.05)
        time.sleep(2.5)  # past a retry: it waits on, without a line per retry
        assert worker.poll() is None
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=30) == 0
    finally:
        worker.kill()
    (line,) = log_path.read_text().splitlines()
    assert line.endswith(
        f"WARNING dex_agents: database unreachable at postgresql+psycopg://postgres@127.0.0.1:"
        f"{closed_port}/dex, retrying every 2 s (connection failed: connection to server at "
        f'"127.0.0.1", port {closed_port} failed: Connection refused)'
    )


async def test_snapshot_prints_any_stored_text_and_its_json_reads_back_exactly(database_url):
    """A lone surrogate or a NUL in a stored text is printed escaped, never a crash, and
    `snapshot --json` reads back to the very same text."""
    text = "caf\udce9 \x00 \u00b0C"
    async with AgentClient(database_url) as client:
        with pytest.warns(FlowTypeNotHostedWarning):
            await client.start_session("Assistant", session_id="odd-texts")
        assert await client.send_user_message("odd-texts", text)

    def cli_process(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "dex_agents", *args, "odd-texts"],
            env={**os.environ, "DEX_AGENTS_DATABASE_URL": database_url},
            capture_output=True,
            text=True,
            errors="surrogateescape",
            timeout=120,
        )

    shown = cli_process("snapshot")
    assert shown.returncode == 0, shown.stderr
    assert "caf\\udce9" in shown.stdout
    as_json = cli_process("snapshot", "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["queued_messages"][0]["message"]["text"] == text
    assert "°C" in as_json.stdout  # unescaped, as a person reads it
