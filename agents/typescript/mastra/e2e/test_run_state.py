"""The Mastra run state's round trip: a turn paused at its tool calls, its run state serialized,
then each tool Step and the next model step in a fresh Node process, makes the same model
requests (compared at the scripted model server) as the same turn run without a pause in one
process."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from dex_agents.testing.model_server import ScriptedModelServer, reply_text, reply_tools

SCRIPT = Path(__file__).resolve().parent.parent / "dist-test" / "e2e" / "run-state.js"
CALLS = (("c1", "get_weather", {"city": "Paris"}), ("c2", "get_weather", {"city": "Rome"}))


def node(model: ScriptedModelServer, mode: str, payload: dict[str, Any]) -> dict[str, Any]:
    """One runner call in a Node process of its own."""
    done = subprocess.run(
        ["node", str(SCRIPT), mode],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={**os.environ, "DEX_AGENTS_SCRIPTED_MODEL_URL": model.base_url},
    )
    outcome: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return outcome


def test_a_paused_turn_resumes_in_a_fresh_process_with_the_same_requests(
    model: ScriptedModelServer,
) -> None:
    for _ in range(2):
        model.enqueue(reply_tools(*CALLS), reply_text("Sunny in both."))
    whole = node(model, "whole", {})
    assert whole["kind"] == "turn_completed"

    paused = node(model, "model", {})
    assert paused["kind"] == "tool_calls_requested"
    state = json.loads(paused["frameworkRunState"])
    assert [m["role"] for m in state] == ["assistant"]
    records = []
    for call in paused["toolCalls"]:
        record = {
            "toolCallId": call["toolCallId"],
            "turnId": "turn-1",
            "toolName": call["toolName"],
            "arguments": call["arguments"],
            "status": "approved",
        }
        records.append(node(model, "tool", {"record": record}))
    assert [r["output"] for r in records] == [
        '{"city":"Paris","sky":"sunny"}',
        '{"city":"Rome","sky":"sunny"}',
    ]
    resumed = node(model, "model", {"runState": paused["frameworkRunState"], "records": records})
    assert resumed["kind"] == "turn_completed"

    requests = [r.body for r in model.requests]
    assert len(requests) == 4
    assert requests[2] == requests[0]
    assert requests[3] == requests[1]
    assert [m["role"] for m in requests[3]["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
    ]

    # The stored messages too, but for the time Mastra stamps on each part (createdAt).
    def projection(outcome: dict[str, Any]) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = outcome["newMessages"]
        return [{k: v for k, v in m.items() if k != "frameworkItem"} for m in messages]

    assert projection(resumed) == projection(whole)
    assert len(projection(whole)) == 5
