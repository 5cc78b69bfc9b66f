"""The READMEs' shell commands run as written, each in an environment that holds only what the
command itself installs, and the commands the CLI prints run as printed.

The suite's own environment has every extra, so a README command that forgets one (`uvicorn`
without the `web` extra) would pass there and fail in a fresh clone. Here each command runs
with `uv run` as the README writes it, its project environment a fresh one
(UV_PROJECT_ENVIRONMENT) per distinct set of extras, installed offline from uv's cache. Only
the fixed ports (8765, 8000) become free ones, so that runs on one machine do not collide.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[4]
EXAMPLES = ROOT / "examples"
VENV_BIN = Path(os.environ.get("VIRTUAL_ENV", "/nonexistent")) / "bin"


@pytest.fixture(scope="module")
def environments(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A directory for the fresh project environments, one per set of extras."""
    yield tmp_path_factory.mktemp("environments")


def user_env(environments: Path, *extras: str, project: str = "core") -> dict[str, str]:
    """A shell's environment in a fresh clone: not this suite's virtual environment, uv offline
    (from its cache), and the project's environment (agents/python/<project>) the fresh one
    for `extras`."""
    name = "-".join([project, *sorted(extras)])
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("VIRTUAL_ENV", "UV", "UV_RUN_RECURSION_DEPTH", "DEX_AGENTS_DATABASE_URL")
        and not k.startswith(("OPENAI_", "LITELLM_"))
    }
    path = [p for p in env["PATH"].split(os.pathsep) if Path(p) != VENV_BIN]
    env["PATH"] = os.pathsep.join(path)
    env.update(UV_OFFLINE="1", UV_PROJECT_ENVIRONMENT=str(environments / name))
    # Bytecode, compiled once for all the processes of these tests, goes to a directory of
    # its own: the examples' directories stay as they were.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(environments / "bytecode")
    return env


def offline_block(readme: Path) -> tuple[str, dict[str, str], str]:
    """The "Run it offline" block: the model server's command, the exports, the app's."""
    section = readme.read_text().split("## Run it offline", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None, readme
    lines = [line for line in block.group(1).splitlines() if line and not line.startswith("#")]
    (server,) = [line for line in lines if "dex-agents model-server" in line]
    (exports,) = [line for line in lines if line.startswith("export ")]
    env = dict(word.split("=", 1) for word in shlex.split(exports)[1:])
    return server, env, lines[-1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def background(command: str, cwd: Path, env: dict[str, str], log: Path) -> Iterator[Path]:
    """A README command left running in its own process group; yields its log."""
    with open(log, "w") as out:
        process = subprocess.Popen(
            command, shell=True, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    try:
        yield log
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def wait_for_line(log: Path, pattern: str, timeout: float = 120.0) -> re.Match[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(pattern, log.read_text())
        if found:
            return found
        time.sleep(0.1)
    raise TimeoutError(f"no {pattern!r} in {timeout:g} s:\n{log.read_text()}")


def sh(command: str, cwd: Path, env: dict[str, str], **kwargs: object) -> str:
    """Runs a command line as a shell does; returns its output, failing on an error."""
    run = subprocess.run(
        command, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
        **kwargs,  # type: ignore[call-overload]
    )  # fmt: skip
    assert run.returncode == 0, f"{command}\n{run.stdout}\n{run.stderr}"
    return str(run.stdout)


@contextmanager
def model_server(readme: Path, env: dict[str, str], log: Path) -> Iterator[dict[str, str]]:
    """The README's scripted model server, running; yields the README's exports."""
    server, exports, _ = offline_block(readme)
    port = str(free_port())
    with background(server.replace("8765", port), readme.parent, env, log):
        wait_for_line(log, r"scripted model at http://127\.0\.0\.1:\d+")
        yield {k: v.replace("8765", port) for k, v in exports.items()}


def test_the_stepwise_assistant_runs_offline_as_its_readme_says(
    environments: Path, tmp_path: Path
) -> None:
    readme = EXAMPLES / "stepwise_assistant" / "README.md"
    env = user_env(environments, "stepwise")
    env["DEX_AGENTS_DATABASE_URL"] = f"sqlite:///{tmp_path / 'example.sqlite'}"
    _, _, command = offline_block(readme)
    assert "--extra stepwise" in command
    with model_server(readme, user_env(environments), tmp_path / "model.log") as exports:
        out = sh(command, readme.parent, {**env, **exports}, input="#releases\n")
    assert out.splitlines()[-1].startswith("Steps: StartAgentSession -> RunModel -> CallTool")


def test_the_fastapi_app_runs_offline_as_its_readme_says(
    environments: Path, tmp_path: Path
) -> None:
    readme = EXAMPLES / "fastapi_app" / "README.md"
    env = user_env(environments, "stepwise", "web")
    env["DEX_AGENTS_DATABASE_URL"] = f"sqlite:///{tmp_path / 'example.sqlite'}"
    _, _, command = offline_block(readme)
    # The command with a model runs the same app the same way.
    with_model = re.findall(r"^uv run .*uvicorn.*$", readme.read_text(), re.M)
    assert set(with_model) == {command}
    port = str(free_port())
    with model_server(readme, user_env(environments), tmp_path / "model.log") as exports:
        app = command.replace("--port 8000", f"--port {port}")
        log_path = tmp_path / "uvicorn.log"
        with background(app, readme.parent, {**env, **exports}, log_path) as log:
            wait_for_line(log, "Application startup complete")
            reply = httpx.post(
                f"http://127.0.0.1:{port}/sessions",
                json={"message": "When does the Lyon store open?"},
                timeout=120,
            )
    assert reply.status_code == 200, log_path.read_text()
    assert reply.json()["status"] == "completed"
    assert reply.json()["answer"].startswith("The Lyon store opens at 9:00")


@pytest.mark.parametrize(
    ("example", "project", "answers"),
    [("pydantic_ai_support", "pydantic-ai", "y\n"), ("openai_agents_handoff", "openai-agents", "")],
)
def test_an_adapters_example_runs_offline_as_its_readme_says(
    environments: Path, tmp_path: Path, example: str, project: str, answers: str
) -> None:
    """The adapters' examples, with their adapter's project environment made fresh."""
    readme = EXAMPLES / example / "README.md"
    env = user_env(environments, project=project)
    env["DEX_AGENTS_DATABASE_URL"] = f"sqlite:///{tmp_path / 'example.sqlite'}"
    server, _, command = offline_block(readme)
    assert f"--project ../../agents/python/{project} " in server + command
    with model_server(readme, env, tmp_path / "model.log") as exports:
        out = sh(command, readme.parent, {**env, **exports}, input=answers)
    assert out.splitlines()[-1].startswith("Steps: StartAgentSession -> RunModel -> ")


def test_the_demo_and_the_commands_it_prints_run_as_printed(
    environments: Path, tmp_path: Path
) -> None:
    """scripts/demo.sh from another directory, on a database of its own: the command it prints
    to inspect the session runs as printed, there, and shows the same Step history."""
    env = user_env(environments)
    url = f"sqlite:///{tmp_path / 'demo.sqlite'}"
    out = sh(f"{ROOT / 'scripts' / 'demo.sh'} --database-url {url}", tmp_path, env)
    history = re.search(r"^Step history: (.*)$", out, re.M)
    printed = re.search(r"^Inspect it: (.*?)   \(and: ", out, re.M)
    assert history and printed, out
    command = printed.group(1)
    assert "--database-url" in command and command.startswith("uv run --project ")
    shown = sh(command, tmp_path, env)
    assert shown.splitlines()[0] == history.group(1)

    # Its hints run as printed too: the earlier messages, and a session that is not there.
    session = command.split(" history ", 1)[1].split()[0]
    prefix = command.split(" history ", 1)[0]
    page = sh(f"{prefix} messages {session} --limit 2 --database-url {url}", tmp_path, env)
    earlier = re.search(r"^\(earlier messages: (.*)\)$", page, re.M)
    assert earlier, page
    assert "#6" in sh(earlier.group(1), tmp_path, env)
    missing = subprocess.run(
        f"{prefix} history no-such-session --database-url {url}",
        shell=True, cwd=tmp_path, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert missing.returncode == 1
    check = re.search(r"check the ID with `(.*?)`", missing.stderr)
    assert check, missing.stderr
    assert session in sh(check.group(1), tmp_path, env)


def test_serve_without_the_web_extra_says_a_command_that_works(environments: Path) -> None:
    """From a clone, the command the error names starts the viewer (here: its --help)."""
    env = user_env(environments)
    failed = subprocess.run(
        "uv run --project agents/python/core dex-agents serve",
        shell=True, cwd=ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert failed.returncode == 1
    commands = re.findall(r"`([^`]+)`", failed.stderr)
    assert len(commands) == 2, failed.stderr
    from_clone, from_wheels = commands
    assert from_wheels == "pip install --find-links dist 'dex-agents[web]'"
    web_env = user_env(environments, "web")
    assert "Serve the session API" in sh(f"{from_clone} --help", ROOT, web_env)
