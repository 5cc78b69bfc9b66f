"""The README's complete example runs as written, with its model served by the scripted server."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import pytest
from dex_agents.runner import ToolCallsRequested, ToolPolicy
from dex_agents.testing import ScriptedModelServer, reply_text, reply_tools

from dex_agents_pydantic_ai import PydanticAiRunner

from .apps.agents import scripted_model
from .driver import Driver

README = Path(__file__).parent.parent / "README.md"


def load_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    match = re.search(r"```python\n(# support_app\.py\n.*?)```", README.read_text(), re.S)
    assert match, "the README has no support_app.py example"
    path = tmp_path / "support_app.py"
    path.write_text(match.group(1))
    monkeypatch.setenv("OPENAI_API_KEY", "unused")  # the example names an OpenAI model
    spec = importlib.util.spec_from_file_location("support_app", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_the_readme_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: ScriptedModelServer
) -> None:
    app = load_example(tmp_path, monkeypatch)
    (flow,) = app.flows
    runner = PydanticAiRunner(
        app.agent, deps_factory=app.build_deps, model=scripted_model(model.base_url)
    )
    driver = Driver(runner, tool_policies=dict(flow.options.tool_policies))
    model.enqueue(
        reply_tools(
            ("s1", "order_status", {"order_id": "o-1"}),
            ("a1", "change_address", {"order_id": "o-1", "address": "2 Elm St"}),
        ),
        reply_text("Shipped; the address is updated."),
        reply_tools(("r1", "refund", {"order_id": "o-1", "amount_cents": 500})),
        reply_text("Refunded."),
    )

    first = await driver.turn("Where is o-1? Ship it to 2 Elm St.")
    second = await driver.turn("Refund 500 cents.")

    assert [(r.tool_name, r.effect, r.status) for r in first.records] == [
        ("order_status", "read", "succeeded"),
        ("change_address", "idempotent_write", "succeeded"),
    ]
    assert json.loads(first.records[0].output or "")["status"] == "shipped"
    assert app.SENT == {"session-1/turn-1/a1": "2 Elm St"}
    requested = second.outcomes[0]
    assert isinstance(requested, ToolCallsRequested)
    assert requested.tool_calls[0].policy == ToolPolicy(
        effect="non_idempotent_write", requires_approval=True
    )
    assert second.records[0].output == "refunded 500 cents on o-1"
