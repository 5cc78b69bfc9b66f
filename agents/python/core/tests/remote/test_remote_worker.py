"""A real `dex-agents worker` process hosting remote flows: `--remote FLOW=URL` and
`--remote-config FILE.toml`, each through a turn whose tool runs at the runner."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from dex_agents.cli import cli
from dex_agents.client import AgentClient
from dex_agents.errors import FlowLoadError
from dex_agents.remote import options_from_table, remote_flows_from_config
from dex_agents.runner import ToolPolicy
from dex_agents.testing.processes import WorkerProcess
from dex_agents.testing.remote_runner_server import (
    ScriptedRunnerServer,
    final_text,
    tool_calls,
    tool_output,
)
from dex_agents.testing.sessions import events_of, turns_done
from dex_agents.testing.tool_log import ToolRunLog

from .conftest import FLOW


def _worker(target: str, database_url: str, tmp_path: Path) -> WorkerProcess:
    # The target is the worker command's first argument: an option goes there as well.
    return WorkerProcess(target, database_url=database_url, log_path=tmp_path / "worker.log")


async def _turn_with_a_tool(
    runner: ScriptedRunnerServer, client: AgentClient, tool_log: ToolRunLog, effect: str | None
) -> str:
    runner.script("run_model_step", tool_calls(("c1", "refund", '{"order": 7}'), effect=effect))
    runner.script("execute_deferred_tool_call", tool_output("refunded", log=tool_log))
    runner.script("run_model_step", final_text("Refunded."))
    session = await client.start_session(FLOW, "Refund order 7")
    snapshot = await client.wait_for(session, turns_done(1), timeout=60)
    assert [m.text for m in snapshot.messages][-1] == "Refunded."
    assert tool_log.count("refund") == 1
    return session


async def test_worker_remote_option_hosts_the_flow(
    runner: ScriptedRunnerServer,
    database_url: str,
    client: AgentClient,
    tool_log: ToolRunLog,
    tmp_path: Path,
) -> None:
    with _worker(f"--remote={FLOW}={runner.base_url}", database_url, tmp_path):
        session = await _turn_with_a_tool(runner, client, tool_log, "read")
    finished = await events_of(client, session, "tool_call_finished")
    assert [e["status"] for e in finished] == ["succeeded"]
    assert "".join(e["delta"] for e in await events_of(client, session, "text_delta")) == (
        "Refunded."
    )
    assert runner.describes == 1


async def test_worker_remote_config_applies_the_flow_options(
    runner: ScriptedRunnerServer,
    database_url: str,
    client: AgentClient,
    tool_log: ToolRunLog,
    tmp_path: Path,
) -> None:
    config = tmp_path / "flows.toml"
    config.write_text(
        f'[flows.{FLOW}]\nurl = "{runner.base_url}"\ndefault_tool_effect = "read"\n'
        f'[flows.{FLOW}.tool_policies.refund]\neffect = "idempotent_write"\n'
    )
    with _worker(f"--remote-config={config}", database_url, tmp_path):
        session = await _turn_with_a_tool(runner, client, tool_log, None)
    steps = [s.step_type for s in await client.get_step_history(session)]
    # The config's policy made the call an idempotent write: CallTool, not single-attempt.
    assert "CallTool" in steps and "CallSingleAttemptTool" not in steps
    (call,) = runner.bodies("execute_deferred_tool_call")
    assert call["tool_call"]["effect"] == "idempotent_write"


def test_worker_needs_a_target_or_a_remote_flow() -> None:
    result = CliRunner().invoke(cli, ["worker"])
    assert result.exit_code == 2
    assert "--remote" in result.output


def test_worker_refuses_a_malformed_remote_option() -> None:
    result = CliRunner().invoke(cli, ["worker", "--remote", "TriageAgent"])
    assert result.exit_code != 0
    assert "FLOW=URL" in result.output


def test_config_maps_the_plain_options(tmp_path: Path) -> None:
    options = options_from_table(
        "flows.toml",
        {
            "url": "http://x",
            "default_tool_effect": "read",
            "tool_call_timeout_seconds": 30,
            "built_in_tools": ["ask_user"],
            "tool_policies": {
                "refund": {"effect": "non_idempotent_write", "requires_approval": True}
            },
        },
    )
    assert options.default_tool_effect == "read"
    assert options.tool_call_timeout.total_seconds() == 30
    assert options.built_in_tools == ("ask_user",)
    assert options.tool_policies["refund"] == ToolPolicy("non_idempotent_write", True)
    with pytest.raises(FlowLoadError, match="unknown keys colour"):
        options_from_table("flows.toml", {"url": "http://x", "colour": "red"})


def test_config_without_flows_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "flows.toml"
    config.write_text("[other]\n")
    with pytest.raises(FlowLoadError, match="no \\[flows"):
        remote_flows_from_config(config)
