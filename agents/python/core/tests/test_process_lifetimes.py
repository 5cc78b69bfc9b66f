"""Processes start and stop as a user expects: a Worker run as a program's main task says what
it hosts and stops cleanly on Ctrl-C; what the tests start does not outlive them (a killed
test run, a stopped scripts/test.sh); the model server binds its port again at once."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[4]


def gone(pid: int) -> bool:
    """No such process, or a zombie that no one has reaped yet (it runs no more)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status


def wait_until_gone(pid: int, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if gone(pid):
            return True
        time.sleep(0.1)
    return False


def wait_for_file(path: Path, process: subprocess.Popen[str], timeout: float = 120.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    raise TimeoutError(f"{path} was not written in {timeout:g} s")


def test_a_worker_run_as_the_main_task_says_what_it_hosts_and_stops_on_ctrl_c(
    tmp_path: Path,
) -> None:
    """The README's headline program: asyncio.run(Worker([flow]).run())."""
    (tmp_path / "main.py").write_text(
        textwrap.dedent(
            """
            import asyncio

            from dex_agents import AgentSessionFlow, Worker
            from dex_agents.testing.scripted_runner import ScriptedRunner

            flow = AgentSessionFlow(ScriptedRunner([]), flow_type="Hello")
            asyncio.run(Worker([flow]).run())
            """
        )
    )
    env = {**os.environ, "DEX_AGENTS_DATABASE_URL": f"sqlite:///{tmp_path / 'main.sqlite'}"}
    program = subprocess.Popen(
        [sys.executable, "main.py"],
        cwd=tmp_path,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C as in a terminal, even when the tests run as a background job (which starts
        # with SIGINT ignored, and a child inherits that).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert program.stderr is not None
        first = program.stderr.readline()
        program.send_signal(signal.SIGINT)
        rest = program.communicate(timeout=60)[1]
    finally:
        program.kill()
    assert "dex-agents Worker " in first and first.rstrip().endswith(" hosts Hello"), first
    assert program.returncode == 0, rest
    assert "Traceback" not in rest and "KeyboardInterrupt" not in rest, rest
    assert rest.rstrip().endswith(" stopped"), rest


def test_a_worker_process_stops_when_the_process_that_started_it_is_killed(
    tmp_path: Path,
) -> None:
    """A test run killed with SIGKILL (no cleanup runs) leaves no Worker behind."""
    pid_file = tmp_path / "worker.pid"
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import time
                from pathlib import Path
                from dex_agents.testing import WorkerProcess

                worker = WorkerProcess(
                    "dex_agents.demo:flows", database_url="sqlite:///{tmp_path}/w.sqlite"
                ).start()
                Path("{pid_file}").write_text(str(worker.process.pid))
                time.sleep(600)
                """
            ),
        ],
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        worker_pid = int(wait_for_file(pid_file, parent))
        assert not gone(worker_pid)
        parent.kill()
        parent.wait()
        assert wait_until_gone(worker_pid), "the Worker outlived the process that started it"
    finally:
        parent.kill()
        if pid_file.exists() and not gone(int(pid_file.read_text())):
            os.killpg(int(pid_file.read_text()), signal.SIGKILL)


def test_scripts_test_sh_stopped_by_sigterm_stops_the_step_it_runs(tmp_path: Path) -> None:
    package = tmp_path / "package"
    package.mkdir()
    ci = package / "ci.sh"
    pid_file = tmp_path / "step.pid"
    ci.write_text(f"#!/usr/bin/env bash\nsleep 300 &\necho $! > {pid_file}\nwait\n")
    ci.chmod(0o755)
    script = subprocess.Popen(
        [str(ROOT / "scripts" / "test.sh"), str(package)],
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        sleeper = int(wait_for_file(pid_file, script))
        script.send_signal(signal.SIGTERM)  # to the script alone, as `kill PID` does
        script.wait(timeout=30)
        assert script.returncode == 143
        assert wait_until_gone(sleeper, timeout=10), "the step outlived scripts/test.sh"
    finally:
        os.killpg(script.pid, signal.SIGKILL) if script.poll() is None else None
        if pid_file.exists() and not gone(int(pid_file.read_text())):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)


def test_the_model_server_binds_its_port_again_at_once_after_a_kill(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text('[{"text": "hello"}]')
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "dex_agents", "model-server", "--script", str(script)]
    command += ["--port", str(port)]
    base_url = f"http://127.0.0.1:{port}/v1"
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    for attempt in (1, 2):
        server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            assert server.stdout is not None
            banner = server.stdout.readline().decode()
            assert banner.startswith(f"scripted model at {base_url}"), (attempt, banner)
            # A connection still open when the server dies: its side of it lingers on the
            # port (FIN_WAIT, then TIME_WAIT), which the second server must bind past.
            with httpx.Client() as client:
                reply = client.post(f"{base_url}/chat/completions", json=request)
                assert reply.json()["choices"][0]["message"]["content"] == "hello"
                server.kill()
                server.wait()
        finally:
            server.kill()
            server.wait()


def test_a_worker_leaves_a_signal_the_application_handles_to_it() -> None:
    """Run as a task of an application that handles SIGTERM itself (a server's shutdown),
    the Worker does not take the signal over; Python's and asyncio.run's own it does."""
    from dex_agents.worker import _unclaimed

    previous = signal.getsignal(signal.SIGTERM)
    try:
        signal.signal(signal.SIGTERM, lambda *_: None)
        assert not _unclaimed(signal.SIGTERM)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        assert _unclaimed(signal.SIGTERM)
    finally:
        signal.signal(signal.SIGTERM, previous)

    async def inside_asyncio_run() -> bool:
        return _unclaimed(signal.SIGINT)

    assert asyncio.run(inside_asyncio_run())
