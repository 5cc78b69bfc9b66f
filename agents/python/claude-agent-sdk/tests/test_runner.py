"""The runner in process (RunnerDriver) against the real Claude Code CLI and the scripted
Anthropic server: a whole turn in one model step, its transcript in the session's records."""

from __future__ import annotations

import dataclasses
import json

import pytest
from dex_agents.testing import (
    RunnerDriver,
    ScriptedAnthropicServer,
    ToolRunLog,
    anthropic_text,
    anthropic_tools,
)
from dex_agents.testing.features import feature_mcp_source

from dex_agents_claude_agent_sdk import ClaudeAgentRunner, HarnessTurnError
from dex_agents_claude_agent_sdk.transcript import parse_turn
from tests.apps.harness import options


@pytest.fixture(autouse=True)
def _tool_log_env(tool_log: ToolRunLog, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOL_LOG", str(tool_log.path))


async def test_a_turn_runs_in_one_step_and_the_next_resumes_from_the_records(
    anthropic_model: ScriptedAnthropicServer, tool_log: ToolRunLog
) -> None:
    anthropic_model.enqueue(
        anthropic_tools(("toolu_1", "mcp__t__lookup", {"q": "paris"}), input_tokens=11),
        anthropic_text("Paris is sunny.", input_tokens=13, output_tokens=4),
    )
    driver = RunnerDriver(ClaudeAgentRunner(options=options(anthropic_model.base_url)))
    first = await driver.turn("Weather in Paris?")

    assert len(first.outcomes) == 1  # the whole turn, tool included, in one model step
    assert first.final.usage is not None
    assert (first.final.usage.model_calls, first.final.usage.input_tokens) == (2, 24)
    assert driver.events.texts() == "Paris is sunny."
    assert tool_log.count("lookup") == 1
    call, result, answer = first.new_messages
    assert (call.tool_call_id, call.tool_name, call.tool_arguments) == (
        "toolu_1",
        "mcp__t__lookup",
        json.dumps({"q": "paris"}),
    )
    assert (result.role, result.tool_output) == ("tool", "found paris")
    assert answer.text == "Paris is sunny."
    transcript = parse_turn(answer.framework_item)
    assert transcript is not None and transcript.entries[""]
    assert transcript.cost_usd is not None and transcript.cost_usd > 0

    # A new runner (as on another host) over the same stored messages resumes the session.
    anthropic_model.enqueue(anthropic_text("Still sunny."))
    driver.runner = ClaudeAgentRunner(options=options(anthropic_model.base_url))
    second = await driver.turn("And tomorrow?")
    assert second.final.new_messages[-1].text == "Still sunny."
    texts = anthropic_model.requests[-1].texts()
    assert "Weather in Paris?" in texts and "found paris" in "".join(texts)
    assert "Paris is sunny." in texts and texts[-1] == "And tomorrow?"
    assert parse_turn(second.new_messages[-1].framework_item).session_id == (  # type: ignore[union-attr]
        transcript.session_id
    )
    assert tool_log.count("lookup") == 1


async def test_a_failed_model_call_fails_the_step(anthropic_model: ScriptedAnthropicServer) -> None:
    anthropic_model.enqueue(*[anthropic_text("bad request", status=400)] * 3, anthropic_text("-"))
    driver = RunnerDriver(ClaudeAgentRunner(options=options(anthropic_model.base_url)))
    with pytest.raises(HarnessTurnError, match="400 bad request"):
        await driver.turn("Hello?")
    # The CLI itself sent the request three times (the fourth reply is left unused).
    assert (len(anthropic_model.requests), anthropic_model.pending) == (3, 1)
    assert driver.messages[-1].role == "user"  # nothing of the failed attempt was stored


async def test_a_server_error_fails_the_step_at_once_unless_framework_retries(
    anthropic_model: ScriptedAnthropicServer,
) -> None:
    """RunModel's attempts are the model call's retries: the CLI's own are off by default."""
    anthropic_model.enqueue(anthropic_text("overloaded", status=529))
    driver = RunnerDriver(ClaudeAgentRunner(options=options(anthropic_model.base_url)))
    with pytest.raises(HarnessTurnError, match="overloaded"):
        await driver.turn("Hello?")
    assert len(anthropic_model.requests) == 1  # a retry would have asked again

    # With framework_retries the CLI retries the request itself, inside the one model step.
    anthropic_model.enqueue(anthropic_text("overloaded", status=529), anthropic_text("Hi."))
    runner = ClaudeAgentRunner(options=options(anthropic_model.base_url), framework_retries=True)
    turn = await RunnerDriver(runner).turn("Hello?")
    assert turn.final.new_messages[-1].text == "Hi."
    assert (len(anthropic_model.requests), anthropic_model.pending) == (3, 0)


def test_options_the_runner_owns_are_refused() -> None:
    with pytest.raises(ValueError, match="session_store and resume"):
        ClaudeAgentRunner(options=options("http://127.0.0.1:9").__class__(resume="abc"))


def test_tool_source_keys_must_be_free() -> None:
    source = feature_mcp_source()
    with pytest.raises(ValueError, match="reserved for the session's built-in tools"):
        ClaudeAgentRunner(options=options("http://127.0.0.1:9"), tool_sources={"dex": source})
    with pytest.raises(ValueError, match="both in mcp_servers and in tool_sources"):
        ClaudeAgentRunner(options=options("http://127.0.0.1:9"), tool_sources={"t": source})


def test_tool_sources_beside_servers_in_a_config_file_are_refused_when_the_runner_is_made() -> None:
    given = dataclasses.replace(options("http://127.0.0.1:9"), mcp_servers="/etc/mcp.json")
    ClaudeAgentRunner(options=given)  # without sources, the CLI reads the file
    with pytest.raises(ValueError, match=r"mcp_servers as a dict .* config file path"):
        ClaudeAgentRunner(options=given, tool_sources={"shop": feature_mcp_source()})
