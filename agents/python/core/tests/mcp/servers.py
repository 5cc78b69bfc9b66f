"""The test MCP server (server.py) as a stdio configuration or a real HTTP process, and its
run log."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dex_agents.mcp import HttpServer, StdioServer
from dex_agents.testing.shared_worker import WorkerApp

SERVER = Path(__file__).with_name("server.py")


class RunLog:
    """The JSON lines the test server's tools append, one per real run."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def runs(self, tool: str | None = None) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        lines = self.path.read_text(encoding="utf-8").splitlines()
        runs = [json.loads(line) for line in lines if line.strip()]
        return [run for run in runs if tool is None or run["tool"] == tool]

    def wait_for(self, tool: str, count: int = 1, timeout: float = 20.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while len(self.runs(tool)) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{tool} ran {len(self.runs(tool))} times, not {count}")
            time.sleep(0.05)
        return self.runs(tool)


CORE = Path(__file__).resolve().parents[2]


def mcp_worker_app(runs: RunLog, port: int) -> WorkerApp:
    """A shared Worker of `tests/mcp/app.py`, whose MCP server is the HTTP one on `port`
    (`served`), both writing their runs to `runs`."""
    return WorkerApp(
        worker_target="tests.mcp.app:flows",
        worker_cwd=CORE,
        worker_env={
            "MCP_TEST_RUN_LOG": str(runs.path),
            "MCP_TEST_URL": f"http://127.0.0.1:{port}/mcp",
        },
    )


def served(runs: RunLog, port: int) -> Iterator[HttpServerProcess]:
    """The HTTP MCP server on `port` while the generator runs: for a fixture."""
    server = HttpServerProcess(runs, port).start()
    try:
        yield server
    finally:
        server.stop()


def stdio_server(name: str, log: RunLog, **options: Any) -> StdioServer:
    return StdioServer(
        name,
        command=sys.executable,
        args=[str(SERVER), "stdio"],
        env={"MCP_TEST_RUN_LOG": str(log.path)},
        **options,
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class HttpServerProcess:
    """server.py over Streamable HTTP in its own uvicorn process on loopback."""

    def __init__(self, log: RunLog, port: int | None = None) -> None:
        self.log = log
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.unavailable = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def config(self, name: str = "remote", **options: Any) -> HttpServer:
        return HttpServer(name, url=self.url, **options)

    def start(self) -> HttpServerProcess:
        self.process = subprocess.Popen(
            [sys.executable, str(SERVER), "http", str(self.port)],
            env={"MCP_TEST_RUN_LOG": str(self.log.path), "PATH": "/usr/bin:/bin"},
            stdout=subprocess.DEVNULL,
            stderr=None if os.environ.get("MCP_TEST_SERVER_STDERR") else subprocess.DEVNULL,
        )
        # As long as a Worker's start may take (WorkerProcess): tests in parallel processes
        # on a busy machine start many processes at once.
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError("the MCP test server did not start") from None
                time.sleep(0.05)

    def forget_tasks(self) -> None:
        """The server forgets every task it knows, as a restart would (server.py)."""
        assert self.process is not None
        self.process.send_signal(signal.SIGUSR1)

    def set_unavailable(self, unavailable: bool) -> None:
        """The server answers 503 to everything while unavailable, keeping its tasks."""
        assert self.process is not None
        if unavailable != self.unavailable:
            self.process.send_signal(signal.SIGUSR2)
            self.unavailable = unavailable

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process = None
