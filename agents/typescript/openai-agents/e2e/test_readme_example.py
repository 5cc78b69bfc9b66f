"""The README's example, exactly as written there, served by its own Node process to a real
Worker on the scripted model server: a read, a handoff, an approved refund."""

from __future__ import annotations

import json
import re
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from dex_agents.testing.model_server import ScriptedModelServer, reply_text, reply_tools
from dex_agents.testing.node_runner import start_node_app
from dex_agents.testing.sessions import events_of
from dex_agents.testing.shared_worker import SessionRun, SharedWorkerSuite, WorkerApp

E2E = Path(__file__).resolve().parent
PACKAGE = E2E.parent
# Inside the package, so that the example's imports resolve as they would in an application.
EXAMPLE = PACKAGE / "dist-test" / "readme-example.mjs"


def example_source() -> str:
    """The README's `server.mjs`: its first JavaScript block."""
    readme = (PACKAGE / "README.md").read_text()
    match = re.search(r"```js\n(.*?)```", readme, re.DOTALL)
    assert match is not None, "the README has no JavaScript example"
    return match.group(1)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


PORT = _free_port()


class TestReadmeExample(SharedWorkerSuite):
    app = WorkerApp(
        worker_target="readme_flows:flows",
        worker_cwd=E2E,
        worker_env={"README_RUNNER_URL": f"http://127.0.0.1:{PORT}/dex"},
    )

    @pytest.fixture(scope="class", autouse=True)
    @classmethod
    def example(cls, shared_model: ScriptedModelServer) -> Iterator[subprocess.Popen[str]]:
        """The example's Node process, started before the Worker (autouse) asks it to describe."""
        EXAMPLE.write_text(example_source())
        env = {"OPENAI_BASE_URL": shared_model.base_url, "OPENAI_API_KEY": "scripted"}
        process, _ = start_node_app(EXAMPLE, PORT, env)
        yield process
        process.kill()
        process.wait()

    async def test_the_refund_waits_for_approval_then_runs_once(self, run: SessionRun) -> None:
        run.model.enqueue(
            reply_tools(("s1", "order_status", {"order_id": "o-42"})),
            reply_tools(("h1", "transfer_to_Billing", {})),
            reply_tools(("r1", "refund", {"order_id": "o-42", "amount_cents": 500})),
            reply_text("Order o-42 has shipped, and I refunded 5.00."),
        )
        client = run.client
        result = await client.start_session_and_wait("SupportAgent", "Refund o-42.", timeout=60)
        assert result.status == "waiting_for_interrupts"
        [interrupt] = result.interrupts
        assert (interrupt.tool_name, json.loads(interrupt.arguments)) == (
            "refund",
            {"order_id": "o-42", "amount_cents": 500},
        )
        assert await client.resolve_interrupt(
            result.session_id, interrupt.interrupt_id, approved=True
        )
        result = await client.wait_for_turn(
            result.session_id, result.turn_id, after=result.event_offset, timeout=60
        )

        assert result.text == "Order o-42 has shipped, and I refunded 5.00."
        assert await events_of(client, result.session_id, "openai_agents.handoff") == [
            {"from_agent": "Support", "to_agent": "Billing", "tool_call_id": "h1"}
        ]
        last = run.requests[-1].body["messages"]
        outputs = {m["tool_call_id"]: m["content"] for m in last if m["role"] == "tool"}
        assert outputs["s1"] == "order o-42 has shipped"
        assert outputs["r1"] == "refunded 500 cents on o-42"
        history = await client.get_step_history(result.session_id)
        steps = [s.step_type for s in history]
        assert steps.count("CallSingleAttemptTool") == 1  # the refund, once
        assert steps.count("CallTool") == 1  # the read
