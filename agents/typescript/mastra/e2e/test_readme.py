"""The README's example, as written: its server.mjs (taken from the README) serves SupportAgent
in a Node process of its own, a real Worker runs a session of it against the scripted model
server, the read tool runs and the write tool waits for approval."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from dex_agents.client import AgentClient
from dex_agents.testing.model_server import ScriptedModelServer, reply_text, reply_tools
from dex_agents.testing.processes import WorkerProcess

E2E = Path(__file__).resolve().parent
PACKAGE = E2E.parent


def readme_server() -> str:
    """The README's `server.mjs` code block."""
    readme = (PACKAGE / "README.md").read_text()
    match = re.search(r"```ts\n(// server\.mjs\n.*?)```", readme, re.DOTALL)
    assert match is not None, "the README has no server.mjs example"
    return match.group(1)


@pytest.fixture
def worker_cwd() -> Path:
    return E2E


@pytest.fixture
def worker_target() -> str:
    return "readme_flows:flows"


@pytest.fixture
def example_url(model: ScriptedModelServer) -> Iterator[str]:
    # Inside the package, so that it imports the package by its own name (dist/).
    script = PACKAGE / "dist-test" / "readme-server.mjs"
    script.write_text(readme_server())
    env = {**os.environ, "PORT": "0", "MODEL_URL": model.base_url}
    process = subprocess.Popen(["node", str(script)], env=env, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    try:
        assert line.startswith("runners at "), line
        yield line.removeprefix("runners at ").strip()
    finally:
        process.kill()
        process.wait()


async def test_the_readme_example_runs_a_session(
    example_url: str,
    make_worker: Callable[..., WorkerProcess],
    client: AgentClient,
    model: ScriptedModelServer,
) -> None:
    make_worker(README_RUNNER_URL=example_url).start()
    model.enqueue(
        reply_tools(("c1", "order_status", {"orderId": "A-7"})),
        reply_text("Order A-7 has shipped."),
        reply_tools(("c2", "refund", {"orderId": "A-7", "amountCents": 500})),
    )
    first = await client.start_session_and_wait("SupportAgent", "Where is order A-7?")
    assert first.status == "completed", first.error
    assert first.text == "Order A-7 has shipped."
    outputs = [m.tool_output for m in first.messages if m.role == "tool"]
    assert outputs == ['{"orderId":"A-7","status":"shipped"}']

    second = await client.run_turn(first.session_id, "Refund 5 dollars on it.")
    assert second.status == "waiting_for_interrupts"
    assert [i.tool_name for i in second.interrupts] == ["refund"]
