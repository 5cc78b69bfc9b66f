"""The README's complete example and its chat script, and the root README's first snippet, run
as written, with their model served by the scripted server."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import warnings
from pathlib import Path
from types import ModuleType

import pytest
from dex_agents import AgentClient, FlowTypeNotHostedWarning
from dex_agents.runner import ToolCallsRequested, ToolPolicy
from dex_agents.testing import (
    RunnerDriver,
    ScriptedModelServer,
    reply_text,
    reply_tools,
)
from dex_agents.testing.readme import readme_block, run_example

from dex_agents_pydantic_ai import PydanticAiRunner

from .apps.agents import scripted_model

README = Path(__file__).parent.parent / "README.md"
ROOT_README = Path(__file__).resolve().parents[4] / "README.md"


def load_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    path = tmp_path / "support_app.py"
    path.write_text(readme_block(README, "# support_app.py"))
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
    driver = RunnerDriver(runner, tool_policies=dict(flow.options.tool_policies))
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


def model_env(model: ScriptedModelServer) -> dict[str, str]:
    """The README's `OPENAI_API_KEY=...`, with the scripted server as OpenAI."""
    env = {k: v for k, v in os.environ.items() if k != "DEX_AGENTS_DATABASE_URL"}
    env.update(OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="scripted")
    return env


def test_the_readme_chat_script_approves_the_refund(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    model.enqueue(
        reply_tools(("s1", "order_status", {"order_id": "o-1"})),
        reply_text("Order o-1 has shipped."),
        reply_tools(("r1", "refund", {"order_id": "o-1", "amount_cents": 500})),
        reply_text("Refunded 500 cents on o-1."),
    )
    env = model_env(model)
    # `dex-agents worker support_app:flows`, on the default database of the working directory.
    chat = run_example(
        readme_block(README, "# support_app.py"),
        readme_block(README, "# chat.py"),
        tmp_path,
        "sqlite:///dex_agents.sqlite",
        {k: env[k] for k in ("OPENAI_BASE_URL", "OPENAI_API_KEY")},
        script_env=env,
        timeout=120,
    )

    assert chat.returncode == 0, chat.stderr
    assert chat.stdout.splitlines() == [
        "Order o-1 has shipped.",
        'approving refund {"order_id":"o-1","amount_cents":500}',
        "Refunded 500 cents on o-1.",
    ]
    refund_output = [
        item["output"]
        for item in model.requests[-1].body["input"]
        if item.get("type") == "function_call_output" and item["call_id"] == "r1"
    ]
    assert refund_output == ["refunded 500 cents on o-1"]


async def test_the_root_readme_snippet_serves_sessions(
    model: ScriptedModelServer, tmp_path: Path
) -> None:
    (tmp_path / "triage_app.py").write_text(readme_block(ROOT_README, "import asyncio"))
    model.enqueue(reply_text("Sorry to hear that: I've sent this to the shipping team."))
    log_path = tmp_path / "triage_app.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [sys.executable, "triage_app.py"],
            cwd=tmp_path,
            env=model_env(model),
            stdout=log,
            stderr=subprocess.STDOUT,
            # Ctrl-C as in a terminal, even when the tests run as a background job (which
            # starts with SIGINT ignored, and a child inherits that).
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
    try:
        async with AgentClient(f"sqlite:///{tmp_path / 'dex_agents.sqlite'}") as client:
            with warnings.catch_warnings():
                # The Worker may still be starting: the session waits for it.
                warnings.simplefilter("ignore", FlowTypeNotHostedWarning)
                result = await client.start_session_and_wait(
                    "TriageAgent", "My order never came", timeout=60
                )
    finally:
        process.send_signal(signal.SIGINT)  # Ctrl-C
        returncode = process.wait(timeout=60)

    assert (result.status, result.text) == (
        "completed",
        "Sorry to hear that: I've sent this to the shipping team.",
    )
    assert model.requests[0].body["instructions"] == "Triage support tickets."
    # Ctrl-C stops the Worker cleanly, as it stops `dex-agents worker`: no traceback.
    log_text = log_path.read_text()
    assert returncode == 0, log_text
    assert "Traceback" not in log_text and "stopped" in log_text, log_text
