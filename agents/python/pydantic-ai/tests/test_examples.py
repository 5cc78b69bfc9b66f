"""examples/pydantic_ai_support runs as its README says: in a process of its own (its Worker
inside it), its model the scripted server replying from the example's script.json, its
sessions in a fresh SQLite file."""

from __future__ import annotations

from pathlib import Path

from dex_agents.testing import ScriptedModelServer
from dex_agents.testing.model_server import load_script
from dex_agents.testing.processes import run_example

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "pydantic_ai_support"


def test_the_support_agent_refunds_once_after_an_approval(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    model.enqueue(*load_script(str(EXAMPLE / "script.json")))

    run = run_example(
        EXAMPLE / "support_agent.py",
        model_url=model.base_url,
        database_url=f"sqlite:///{tmp_path / 'example.sqlite'}",
        cwd=tmp_path,
        input="y\n",  # approves the refund
    )

    assert run.returncode == 0, run.stderr
    steps = [
        *("StartAgentSession", "RunModel", "CallTool", "ResumeTurn", "RunModel"),
        "AwaitUserMessage",
        *("RunModel", "AwaitToolApproval", "ResumeTurn", "CallSingleAttemptTool", "RunModel"),
        "AwaitUserMessage",
    ]
    assert run.stdout.splitlines() == [
        "[completed] Your kettle (order o-1001) has been delivered.",
        'Approve refund_order {"order_id":"o-1001","amount_cents":4500,"reason":"arrived broken"}'
        "? [y/N] [payments] refunded 45.00 on o-1001 (arrived broken)",
        "[completed] I'm sorry about the kettle: 45.00 is refunded to your card.",
        "Steps: " + " -> ".join(steps),
    ]
    # The refund ran exactly once, and each tool's result reached the model.
    assert run.stdout.count("[payments]") == 1
    seen = {
        m["tool_call_id"]: m["content"]
        for request in model.requests
        for m in request.body["messages"]
        if m["role"] == "tool"
    }
    assert seen == {
        "call-1": '{"item":"kettle","status":"delivered","paid_cents":4500}',
        "call-2": "refunded 4500 cents on o-1001",
    }
