"""A fresh Worker's first model call against its later ones, per adapter.

Each adapter's test app runs in a fresh `dex-agents worker` process (the adapter's own
virtual environment, `uv sync` done in its folder) on a new SQLite database, against a
scripted model server on loopback. As soon as the Worker reports ready the benchmark runs one
turn, then `--later` more, one at a time, each a new session answering "Hi." with no tool;
the durations of their RunModel Steps (started to ended, from the Step history) are the model
calls. A Worker must do before it reports ready whatever its first model call would wait for
(imports, client set-up, a tokenizer), so the first costs what the later ones cost.

The Workers run without network, as a deployment behind a firewall: HTTP(S)_PROXY point at a
loopback port that takes connections and never answers (`--network blackhole`, the default),
or at one that refuses them (`--network closed`); `--network host` leaves the environment as
it is. Loopback (the model server) bypasses the proxy. Nothing sets LITELLM_LOCAL_MODEL_COST_MAP
for the Workers: the adapters must.

    cd agents/python/core && uv run python bench/first_model_call.py [--later N]
        [--adapters google-adk,langgraph,...] [--network blackhole|closed|host]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from dex_agents import AgentClient
from dex_agents.testing import (
    MODEL_URL_ENV,
    ScriptedAnthropicServer,
    ScriptedModelServer,
    anthropic_text,
    reply_text,
)
from dex_agents.worker import READY_FILE_ENV, WORKER_ID_ENV

PYTHON = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Adapter:
    name: str
    folder: str
    target: str
    flow_type: str
    anthropic: bool = False


ADAPTERS = [
    Adapter("openai-agents", "openai-agents", "tests.apps.matrix:flows", "Matrix"),
    Adapter("google-adk", "google-adk", "tests.apps.matrix:flows", "Matrix"),
    Adapter("langgraph", "langgraph", "tests.apps.matrix:flows", "Matrix"),
    Adapter("pydantic-ai", "pydantic-ai", "tests.apps.matrix:flows", "Matrix"),
    Adapter("stepwise (core)", "core", "tests.stepwise.app:flows", "Assistant"),
    Adapter(
        "claude-agent-sdk",
        "claude-agent-sdk",
        "tests.apps.harness:flows",
        "ClaudeHarness",
        anthropic=True,
    ),
]


@dataclass(frozen=True)
class Figures:
    ready_seconds: float
    first: float
    later: list[float]


def _seconds(start: str | None, end: str | None) -> float:
    assert start is not None and end is not None
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def _network_env(mode: str, holder: list[socket.socket]) -> dict[str, str]:
    if mode == "host":
        return {}
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    if mode == "blackhole":
        listener.listen(64)  # connections complete in the backlog; nothing ever answers
        holder.append(listener)
    port = listener.getsockname()[1]
    if mode == "closed":
        listener.close()
    proxy = f"http://127.0.0.1:{port}"
    return {
        "HTTPS_PROXY": proxy,
        "HTTP_PROXY": proxy,
        "https_proxy": proxy,
        "http_proxy": proxy,
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }


def _start_worker(
    adapter: Adapter, url: str, env: dict[str, str], log: Path
) -> tuple[subprocess.Popen[bytes], float]:
    folder = PYTHON / adapter.folder
    ready = Path(tempfile.mkdtemp()) / "ready"
    environment = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    environment.update(env)
    environment.update({READY_FILE_ENV: str(ready), WORKER_ID_ENV: f"bench-{os.getpid()}"})
    command = [str(folder / ".venv" / "bin" / "python"), "-m", "dex_agents", "worker"]
    started = time.monotonic()
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*command, adapter.target, "--database-url", url],
            cwd=folder,
            env=environment,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    while not ready.exists():
        if process.poll() is not None:
            raise RuntimeError(f"the {adapter.name} Worker exited:\n{log.read_text()[-3000:]}")
        time.sleep(0.01)
    return process, time.monotonic() - started


async def _turns(client: AgentClient, adapter: Adapter, count: int) -> list[float]:
    durations = []
    for i in range(count):
        result = await client.start_session_and_wait(adapter.flow_type, f"Hello {i}?", timeout=120)
        if result.status != "completed":
            raise RuntimeError(f"{adapter.name}: turn {i} {result.status}: {result.error}")
        history = await client.get_step_history(result.session_id)
        (model_step,) = [s for s in history if s.step_type == "RunModel"]
        durations.append(_seconds(model_step.started_at, model_step.ended_at))
    return durations


async def measure(adapter: Adapter, later: int, network: str, work: Path) -> Figures:
    url = f"sqlite:///{work / (adapter.folder + '.sqlite')}"
    holder: list[socket.socket] = []
    env = _network_env(network, holder)
    model: ScriptedModelServer | ScriptedAnthropicServer
    if adapter.anthropic:
        model = ScriptedAnthropicServer().start()
        model.enqueue(*[anthropic_text("Hi.")] * (later + 1))
        env["ANTHROPIC_BASE_URL"] = model.base_url
    else:
        model = ScriptedModelServer(loop=[reply_text("Hi.")]).start()
        env[MODEL_URL_ENV] = env["OPENAI_BASE_URL"] = model.base_url
        env["OPENAI_API_KEY"] = "x"
    env["TOOL_LOG"] = str(work / "tools.jsonl")
    try:
        process, ready = _start_worker(adapter, url, env, work / f"{adapter.folder}.log")
        client = AgentClient(url)
        try:
            durations = await _turns(client, adapter, later + 1)
        except RuntimeError as error:
            log = (work / f"{adapter.folder}.log").read_text(errors="replace")[-4000:]
            raise RuntimeError(f"{error}\n{adapter.name} Worker log:\n{log}") from None
        finally:
            await client.close()
            process.terminate()
            process.wait(30)
            for listener in holder:
                listener.close()
    finally:
        model.stop()
    return Figures(ready, durations[0], durations[1:])


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--later", type=int, default=5, help="later model calls to time")
    parser.add_argument("--adapters", default=",".join(a.name.split()[0] for a in ADAPTERS))
    parser.add_argument("--network", choices=["blackhole", "closed", "host"], default="blackhole")
    args = parser.parse_args()
    chosen = set(args.adapters.split(","))
    print(f"network: {args.network}; {args.later} later calls; durations of RunModel Steps")
    print(f"{'adapter':<18} {'ready':>8} {'first':>8} {'median later':>13} {'first - median':>15}")
    with tempfile.TemporaryDirectory() as tmp:
        for adapter in ADAPTERS:
            if adapter.name.split()[0] not in chosen:
                continue
            figures = await measure(adapter, args.later, args.network, Path(tmp))
            median = statistics.median(figures.later)
            print(
                f"{adapter.name:<18} {figures.ready_seconds:>7.2f}s {figures.first:>7.3f}s "
                f"{median:>12.3f}s {figures.first - median:>+14.3f}s",
                flush=True,
            )


if __name__ == "__main__":
    asyncio.run(main())
