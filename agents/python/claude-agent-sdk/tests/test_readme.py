"""The README's complete example runs as written: its Worker module and its client script, the
bundled Claude Code CLI pointed at the scripted Anthropic server through ANTHROPIC_BASE_URL."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from dex_agents.testing import (
    ScriptedAnthropicServer,
    WorkerProcess,
    anthropic_text,
    anthropic_tools,
)

README = Path(__file__).parent.parent / "README.md"


def test_the_readme_example_answers_from_its_tool_and_remembers_it(
    anthropic_model: ScriptedAnthropicServer, tmp_path: Path
) -> None:
    app, chat = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)[:2]
    (tmp_path / "support_app.py").write_text(app)
    (tmp_path / "chat.py").write_text(chat)
    anthropic_model.enqueue(
        anthropic_tools(("toolu_1", "mcp__orders__get_order", {"order_id": "o-42"})),
        anthropic_text("Order o-42 is paid."),
        anthropic_text("That was order o-42."),
    )
    env = {"ANTHROPIC_BASE_URL": anthropic_model.base_url, "ANTHROPIC_AUTH_TOKEN": "test"}
    with WorkerProcess(
        "support_app:flows",
        database_url="sqlite:///support.sqlite",
        env=env,
        cwd=tmp_path,
        log_path=tmp_path / "worker.log",
    ):
        chat_run = subprocess.run(
            [sys.executable, "chat.py"], cwd=tmp_path, capture_output=True, text=True, timeout=240
        )

    assert chat_run.returncode == 0, chat_run.stderr
    assert chat_run.stdout.splitlines() == ["Order o-42 is paid.", "That was order o-42."]
    first, second, third = anthropic_model.requests
    assert "order o-42: paid" in "".join(second.texts())
    assert first.body["system"] and "You help customers." in str(first.body["system"])
    assert "Order o-42 is paid." in third.texts()
    assert third.texts()[-1] == "Thanks! Which order was that?"
