"""A README's Python examples run as written, as every adapter package's tests run theirs: the
blocks found in the README itself (so an example that drifts fails its test), the Worker module
in a real Worker process and the client script as a process of its own beside it.

    app, chat = python_blocks(README)[:2]
    model.enqueue(...)
    env = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "test"}
    chat_run = run_example(app, chat, tmp_path, "sqlite:///support.sqlite", env)
    assert chat_run.returncode == 0, chat_run.stderr
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from .processes import WorkerProcess

APP_FILE = "support_app.py"
SCRIPT_FILE = "chat.py"


def python_blocks(readme: Path) -> list[str]:
    """The code of each ```python block of `readme`, in order."""
    return re.findall(r"^```python\n(.*?)^```", readme.read_text(), re.S | re.M)


def readme_block(readme: Path, first_line: str) -> str:
    """The one ```python block of `readme` whose code starts with `first_line`."""
    found = [block for block in python_blocks(readme) if block.startswith(first_line)]
    assert len(found) == 1, f"{readme} has {len(found)} blocks starting with {first_line!r}"
    return found[0]


def run_example(
    app: str,
    script: str,
    tmp_path: Path,
    database_url: str,
    env: Mapping[str, str],
    *,
    script_env: Mapping[str, str] | None = None,
    timeout: float = 240,
) -> subprocess.CompletedProcess[str]:
    """Writes `app` as support_app.py and `script` as chat.py into `tmp_path`, runs a Worker
    of `support_app:flows` there on `database_url` (as the README's `dex-agents worker` command
    names it; a relative SQLite path is in `tmp_path`) with `env`, and the script beside it
    with `script_env` (default: this process's environment); the script's run, its output
    captured as text."""
    (tmp_path / APP_FILE).write_text(app)
    (tmp_path / SCRIPT_FILE).write_text(script)
    with WorkerProcess(
        "support_app:flows",
        database_url=database_url,
        env=dict(env),
        cwd=tmp_path,
        log_path=tmp_path / "worker.log",
    ):
        return subprocess.run(
            [sys.executable, SCRIPT_FILE],
            cwd=tmp_path,
            env=dict(script_env) if script_env is not None else None,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
