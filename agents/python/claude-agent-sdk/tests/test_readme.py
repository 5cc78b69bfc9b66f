"""The README's complete example runs as written: its Worker module and its client script, the
bundled Claude Code CLI pointed at the scripted Anthropic server through ANTHROPIC_BASE_URL."""

from __future__ import annotations

from pathlib import Path

from dex_agents.testing import (
    ScriptedAnthropicServer,
    anthropic_text,
    anthropic_tools,
)
from dex_agents.testing.readme import python_blocks, run_example

README = Path(__file__).parent.parent / "README.md"


def test_the_readme_example_answers_from_its_tool_and_remembers_it(
    anthropic_model: ScriptedAnthropicServer, tmp_path: Path
) -> None:
    app, chat = python_blocks(README)[:2]
    anthropic_model.enqueue(
        anthropic_tools(("toolu_1", "mcp__orders__get_order", {"order_id": "o-42"})),
        anthropic_text("Order o-42 is paid."),
        anthropic_text("That was order o-42."),
    )
    env = {"ANTHROPIC_BASE_URL": anthropic_model.base_url, "ANTHROPIC_AUTH_TOKEN": "test"}
    chat_run = run_example(app, chat, tmp_path, "sqlite:///support.sqlite", env)

    assert chat_run.returncode == 0, chat_run.stderr
    assert chat_run.stdout.splitlines() == ["Order o-42 is paid.", "That was order o-42."]
    first, second, third = anthropic_model.requests
    assert "order o-42: paid" in "".join(second.texts())
    assert first.body["system"] and "You help customers." in str(first.body["system"])
    assert "Order o-42 is paid." in third.texts()
    assert third.texts()[-1] == "Thanks! Which order was that?"
