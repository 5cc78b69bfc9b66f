"""Real Worker and server processes for tests: each in its own process group, so a signal
takes it whole, and each stops when the process that started it is gone (a test run killed,
even by SIGKILL, leaves no orphan: see `dex_agents.cli.PARENT_PID_ENV`)."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

import httpx

from ..cli import PARENT_PID_ENV
from ..worker import READY_FILE_ENV, WORKER_ID_ENV


class _ChildProcess:
    """A `dex-agents` command in its own process group, its output appended to a log file."""

    def __init__(self, log_path: str | Path | None, start_timeout: float) -> None:
        self.log_path = Path(log_path) if log_path else Path(tempfile.mkstemp(suffix=".log")[1])
        self.start_timeout = start_timeout
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _spawn(self, command: list[str], env: Mapping[str, str], cwd: str, note: str) -> None:
        with open(self.log_path, "ab") as log:
            log.write(f"--- {note}{' '.join(command)}\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                command,
                cwd=cwd,
                env={**env, PARENT_PID_ENV: str(os.getpid())},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def kill(self) -> None:
        """SIGKILL of the whole process group: no cleanup runs, as in a crash."""
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM to the process group; SIGKILL when it has not exited within `timeout`."""
        if not self.running:
            return
        assert self.process is not None
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        except ProcessLookupError:
            pass

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-20_000:]
        except FileNotFoundError:
            return ""

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class WorkerProcess(_ChildProcess):
    """`dex-agents worker <target>` as a child process.

    `start()` returns once the Worker has launched; `kill()` sends SIGKILL to its process
    group; `start()` again recovers every Step the killed Worker left in flight. Like a
    deployment, each object keeps one Worker ID across its restarts (`worker_id`), unless
    `env` sets DEX_AGENTS_WORKER_ID (empty: each process takes an ID of its own).
    """

    def __init__(
        self,
        target: str,
        *,
        database_url: str,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        log_path: str | Path | None = None,
        start_timeout: float = 60.0,
    ) -> None:
        self.target = target
        self.database_url = database_url
        self.env = dict(env or {})
        self.env.setdefault(WORKER_ID_ENV, f"test-worker-{uuid.uuid4().hex[:8]}")
        self.worker_id = self.env[WORKER_ID_ENV] or None
        self.cwd = str(cwd) if cwd else os.getcwd()
        super().__init__(log_path, start_timeout)
        self.starts = 0

    def start(self) -> WorkerProcess:
        if self.running:
            raise RuntimeError("the Worker is already running")
        ready = Path(tempfile.mkdtemp()) / "ready"
        env = {**os.environ, **self.env, READY_FILE_ENV: str(ready)}
        command = [sys.executable, "-m", "dex_agents", "worker", self.target]
        command += ["--database-url", self.database_url]
        self._spawn(command, env, self.cwd, f"start {self.starts + 1}: ")
        assert self.process is not None
        self.starts += 1
        deadline = time.monotonic() + self.start_timeout
        while not ready.exists():
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"the Worker exited with {self.process.returncode}:\n{self.log()}"
                )
            if time.monotonic() > deadline:
                self.kill()
                raise TimeoutError(
                    f"the Worker did not start in {self.start_timeout:g} s:\n{self.log()}"
                )
            time.sleep(0.02)
        return self

    def restart(self) -> WorkerProcess:
        self.kill()
        return self.start()

    def __enter__(self) -> WorkerProcess:
        return self if self.running else self.start()


class ServeProcess(_ChildProcess):
    """`dex-agents serve` as a child process on a free loopback port.

        with ServeProcess(database_url) as server:
            httpx.get(f"{server.base_url}/api/sessions", headers=server.headers)

    Entering starts it and waits until its API answers; leaving stops it (SIGTERM, then
    SIGKILL). `token` defaults to a new random one (`auth=False`: none, `--no-auth`); `env`
    adds to this process's environment (DEX_AGENTS_WEB_HEARTBEAT_SECONDS sets the event
    streams' heartbeat).
    """

    def __init__(
        self,
        database_url: str,
        *,
        token: str | None = None,
        auth: bool = True,
        env: Mapping[str, str] | None = None,
        args: Sequence[str] = (),
        cwd: str | Path | None = None,
        log_path: str | Path | None = None,
        start_timeout: float = 60.0,
    ) -> None:
        self.database_url = database_url
        self.token = token or secrets.token_urlsafe(16)
        self.auth = auth
        self.env = dict(env or {})
        self.args = list(args)
        self.cwd = str(cwd) if cwd else os.getcwd()
        super().__init__(log_path, start_timeout)
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def headers(self) -> dict[str, str]:
        """The Authorization header the server accepts."""
        return {"Authorization": f"Bearer {self.token}"}

    def start(self) -> ServeProcess:
        if self.running:
            raise RuntimeError("the server is already running")
        self.port = _free_port()
        command = [sys.executable, "-m", "dex_agents", "serve", "--port", str(self.port)]
        auth = ["--token", self.token] if self.auth else ["--no-auth"]
        command += ["--database-url", self.database_url, *auth, *self.args]
        self._spawn(command, {**os.environ, **self.env}, self.cwd, "")
        self._wait_until_it_answers()
        return self

    def _wait_until_it_answers(self) -> None:
        assert self.process is not None
        deadline = time.monotonic() + self.start_timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"dex-agents serve exited with {self.process.returncode}:\n{self.log()}"
                )
            with contextlib.suppress(httpx.TransportError):
                url = f"{self.base_url}/api/workers"
                if httpx.get(url, headers=self.headers, timeout=5.0).status_code == 200:
                    return
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(
                    f"dex-agents serve did not answer in {self.start_timeout:g} s:\n{self.log()}"
                )
            time.sleep(0.05)

    def __enter__(self) -> ServeProcess:
        return self.start()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def scripted_model_env(model_url: str, database_url: str) -> dict[str, str]:
    """This process's environment as an example's README sets it for an offline run: the
    scripted server as OpenAI (and so as LiteLLM's `openai/...` models), and a database."""
    env = {k: v for k, v in os.environ.items() if k not in ("LITELLM_MODEL", "OPENAI_MODEL")}
    env.update(
        OPENAI_BASE_URL=model_url,
        OPENAI_API_KEY="scripted",
        DEX_AGENTS_DATABASE_URL=database_url,
        PYTHONDONTWRITEBYTECODE="1",  # leaves the example's directory as it was
    )
    return env


def run_example(
    script: Path,
    *,
    model_url: str,
    database_url: str,
    cwd: Path,
    input: str | None = None,
    timeout: float = 120.0,
) -> subprocess.CompletedProcess[str]:
    """Runs an example program as its README says, in a process of its own, against the
    scripted model server at `model_url`; returns what it printed."""
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=cwd,
        env=scripted_model_env(model_url, database_url),
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
