"""The Worker's flows for the end-to-end tests: the matrix app's Node runner process, started
beside the Worker, served to it as remote flows (`dex-agents worker flows:flows`).

The Node process is a child of the Worker, in its process group: a SIGKILL of the Worker's
group (the matrix's kill tests) takes the runner down with it, and the restarted Worker starts
a new one, as a deployment that runs both in one container would. The Worker restarts a
runner that exits on its own (a supervisor's job in production), and writes the runner's PID
to $RUNNER_PID_FILE, so a test can SIGKILL the runner alone. With $RUNNER_URL set, the
Worker starts no runner and calls that one, served by a process of its own.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import threading
import time
from datetime import timedelta
from pathlib import Path

from dex_agents.remote import remote_flow
from dex_agents.testing.matrix import CLIENT_RETRIES_FLOW_TYPE, DEADLINE_FLOW_TYPE, FLOW_TYPE
from dex_agents.testing.matrix_app import matrix_options

APP = Path(__file__).resolve().parent.parent / "dist-test" / "e2e" / "matrix-app.js"
PID_FILE_ENV = "RUNNER_PID_FILE"
RUNNER_URL_ENV = "RUNNER_URL"


class NodeRunner:
    """The Node runner process on one port, started again whenever it exits."""

    def __init__(self) -> None:
        self.port = 0
        self.process = self._start()
        self._stopping = False
        atexit.register(self.stop)
        threading.Thread(target=self._supervise, name="node-runner", daemon=True).start()

    def _start(self) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            ["node", str(APP)],
            env={**os.environ, "PORT": str(self.port)},
            stdout=subprocess.PIPE,
            text=True,
        )
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("runners at "):
            raise RuntimeError(f"the Node runner did not start: {line!r}")
        self.url = line.removeprefix("runners at ").strip()
        self.port = int(self.url.rsplit(":", 1)[1].split("/", 1)[0])
        pid_file = os.environ.get(PID_FILE_ENV)
        if pid_file:  # whole or not at all: a test may read it at any moment
            Path(f"{pid_file}.new").write_text(str(process.pid))
            os.replace(f"{pid_file}.new", pid_file)
        return process

    def _supervise(self) -> None:
        while not self._stopping:
            self.process.wait()
            if self._stopping:
                return
            for _ in range(50):  # the port may take a moment to free
                try:
                    self.process = self._start()
                    break
                except RuntimeError:
                    time.sleep(0.1)

    def stop(self) -> None:
        self._stopping = True
        self.process.kill()


# $RUNNER_URL: a runner already served by another process (a separate service); else a child.
url = os.environ.get(RUNNER_URL_ENV) or NodeRunner().url
flows = [
    remote_flow(url, FLOW_TYPE, matrix_options()),
    remote_flow(url, DEADLINE_FLOW_TYPE, matrix_options(timedelta(seconds=1))),
    remote_flow(url, CLIENT_RETRIES_FLOW_TYPE, matrix_options()),
]
