"""examples/openai_agents_handoff runs as its README says: in a process of its own (its Worker
inside it), its model the scripted server replying from the example's script.json, its
sessions in a fresh SQLite file."""

from __future__ import annotations

from pathlib import Path

from dex_agents.testing import ScriptedModelServer
from dex_agents.testing.model_server import load_script
from dex_agents.testing.processes import run_example
from dex_agents.testing.shared_worker import responses

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "openai_agents_handoff"


def test_the_triage_agent_hands_off_to_the_specialist(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    model.enqueue(*load_script(str(EXAMPLE / "script.json")))

    run = run_example(
        EXAMPLE / "triage.py",
        model_url=model.base_url,
        database_url=f"sqlite:///{tmp_path / 'example.sqlite'}",
        cwd=tmp_path,
    )

    assert run.returncode == 0, run.stderr
    steps = [
        # The first RunModel hands off and makes Shipping's model call: two model calls.
        *("StartAgentSession", "RunModel", "CallTool", "ResumeTurn", "RunModel"),
        "AwaitUserMessage",
        *("RunModel", "AwaitUserMessage"),
    ]
    assert run.stdout.splitlines() == [
        "[handoff] Triage -> Shipping",
        "[completed] Your parcel for order o-1001 is out for delivery with ParcelCo and arrives "
        "today.",
        "[completed] You're welcome! Anything else I can help with?",
        "Steps: " + " -> ".join(steps),
    ]
    # Which agent made each model call: the second turn starts with Triage again.
    agents = [r.body["instructions"].split(".")[0] for r in model.requests]
    assert agents == [
        "You are the first contact of an online shop's support",
        "You answer questions about deliveries",
        "You answer questions about deliveries",
        "You are the first contact of an online shop's support",
    ]
    assert responses.tool_outputs(model.requests[2]) == {
        "call-1": '{"assistant": "Shipping"}',
        "call-2": '{"carrier": "ParcelCo", "status": "out for delivery", "eta": "today"}',
    }
