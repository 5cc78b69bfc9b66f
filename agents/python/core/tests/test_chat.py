"""`dex-agents chat`, driven through its terminal prompts with the scripted demo model."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from dex_agents import SyncAgentClient

pytest.importorskip("litellm")


def chat(tmp_path: Path, lines: list[str], *extra: str) -> str:
    url = f"sqlite:///{tmp_path / 'chat.sqlite'}"
    result = subprocess.run(
        [sys.executable, "-m", "dex_agents", "chat", "--database-url", url, *extra],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_chat_runs_tools_approvals_questions_and_waits_then_resumes(tmp_path: Path) -> None:
    first = chat(
        tmp_path,
        ["Weather in Lisbon?", "Message Ana about it", "y", "Plan a walk", "evening", "/quit"],
    )
    assert "[scripted demo model" in first
    assert "assistant> It is 21 °C and sunny in Lisbon." in first
    assert "? approve send_message" in first
    assert "· send_message: succeeded" in first
    assert "? Morning or evening walk? (morning / evening)" in first
    assert "· durable_wait: succeeded" in first
    assert "The wait is over" in first
    session = re.search(r"Session (\S+):", first)
    assert session is not None

    second = chat(tmp_path, ["And tomorrow?", "/quit"], "--session", session.group(1))
    assert f"Session {session.group(1)}" in second
    earlier = second[: second.index(f"Session {session.group(1)}")]
    assert "--- the last 14 messages of this session ---" in earlier  # all of them
    assert "(earlier: dex-agents messages" not in earlier
    assert "you> Plan a walk" in earlier
    assert "  · calls ask_user(" in earlier
    assert "assistant> The wait is over: enjoy your walk along the river." in earlier
    assert "It is 21 °C" in second  # the demo model starts its script again
    client = SyncAgentClient(f"sqlite:///{tmp_path / 'chat.sqlite'}")
    try:
        snapshot = client.get_agent_snapshot(session.group(1))
        assert snapshot.state is not None and snapshot.state.turn_count == 4
        texts = [m.text for m in snapshot.messages if m.role == "user"]
        assert texts == [
            "Weather in Lisbon?",
            "Message Ana about it",
            "Plan a walk",
            "And tomorrow?",
        ]
    finally:
        client.close()
