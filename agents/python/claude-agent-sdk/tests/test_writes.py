"""Write calls of the runner's SDK MCP tools as tool Steps, in process (RunnerDriver) against
the real Claude Code CLI and the scripted Anthropic server: the CLI run stops before the write,
the tool Step runs it (or the call is rejected), and the resumed run hands the recorded
result to the model as the tool's own result. Real tool runs are counted in the tool log."""

from __future__ import annotations

import dataclasses
import json

import pytest
from claude_agent_sdk import HookContext, HookInput, HookJSONOutput, HookMatcher
from dex_agents import texts as core_texts
from dex_agents.runner import ToolCallsRequested, ToolPolicy, TurnCompleted
from dex_agents.testing import (
    Reject,
    RunnerDriver,
    ScriptedAnthropicServer,
    ToolRunLog,
    anthropic_text,
    anthropic_tools,
)

from dex_agents_claude_agent_sdk import ClaudeAgentRunner, HarnessTurnError
from dex_agents_claude_agent_sdk.texts import ONE_WRITE_AT_A_TIME
from tests.apps.harness import options


@pytest.fixture(autouse=True)
def _tool_log_env(tool_log: ToolRunLog, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOL_LOG", str(tool_log.path))
    monkeypatch.setenv("SEND_SECONDS", "0")


def tool_result(request_messages: list[dict[str, object]], tool_use_id: str) -> dict[str, object]:
    """The tool_result block the model got for `tool_use_id`."""
    for message in request_messages:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_result" and block.get("tool_use_id") == tool_use_id:
                return dict(block)
    raise AssertionError(f"no tool_result for {tool_use_id}")


def result_text(block: dict[str, object]) -> str:
    content = block["content"]
    if isinstance(content, str):
        return content
    return "".join(str(part.get("text", "")) for part in content)  # type: ignore[union-attr]


async def test_a_write_runs_once_in_its_tool_step_and_the_model_gets_its_result(
    anthropic_model: ScriptedAnthropicServer, tool_log: ToolRunLog
) -> None:
    anthropic_model.enqueue(
        anthropic_tools(("toolu_1", "mcp__t__send", {"text": "hi bob"})),
        anthropic_text("Sent it."),
    )
    driver = RunnerDriver(ClaudeAgentRunner(options=options(anthropic_model.base_url)))
    turn = await driver.turn("Tell bob hi.")

    first, second = turn.outcomes
    assert isinstance(first, ToolCallsRequested) and isinstance(second, TurnCompleted)
    (call,) = first.tool_calls
    assert (call.tool_call_id, call.tool_name, json.loads(call.arguments)) == (
        "toolu_1",
        "mcp__t__send",
        {"text": "hi bob"},
    )
    assert call.policy is not None and call.policy.effect == "unclassified"
    assert [(r.status, r.output) for r in turn.records] == [("succeeded", "sent hi bob")]
    # Run by the tool Step only, not by the CLI, with the call's idempotency key.
    assert [e["key"] for e in tool_log.entries("send")] == ["session-1/turn-1/toolu_1"]
    # The resumed run made one model call, which got the recorded result as the tool's own.
    assert len(anthropic_model.requests) == 2 and anthropic_model.pending == 0
    block = tool_result(anthropic_model.requests[1].messages, "toolu_1")
    assert result_text(block) == "sent hi bob" and not block.get("is_error")
    # The result, which came in the resumed run, is named as its call of the first run.
    assert [(m.role, m.tool_name, m.tool_output or m.text) for m in turn.new_messages] == [
        ("assistant", "mcp__t__send", None),
        ("tool", "mcp__t__send", "sent hi bob"),
        ("assistant", None, "Sent it."),
    ]

    # The next turn resumes the whole transcript, the write's result included.
    anthropic_model.enqueue(anthropic_text("You're welcome."))
    await driver.turn("Thanks.")
    texts = anthropic_model.requests[-1].texts()
    assert "sent hi bob" in "".join(texts) and texts[-1] == "Thanks."
    assert tool_log.count("send") == 1


async def test_a_rejected_write_never_runs_and_the_model_sees_the_rejection(
    anthropic_model: ScriptedAnthropicServer, tool_log: ToolRunLog
) -> None:
    anthropic_model.enqueue(
        anthropic_tools(("toolu_1", "mcp__t__send", {"text": "spam"})),
        anthropic_text("Not sent."),
    )
    driver = RunnerDriver(ClaudeAgentRunner(options=options(anthropic_model.base_url)))
    turn = await driver.turn("Spam everyone.", decide=lambda _: Reject("No spam, please."))

    assert [r.status for r in turn.records] == ["rejected"]
    assert tool_log.count("send") == 0
    block = tool_result(anthropic_model.requests[1].messages, "toolu_1")
    assert result_text(block) == "No spam, please." and block.get("is_error") is True
    assert turn.new_messages[-1].text == "Not sent."


async def test_outcome_unknown_and_a_failed_write_reach_the_model_as_errors(
    anthropic_model: ScriptedAnthropicServer, tool_log: ToolRunLog
) -> None:
    anthropic_model.enqueue(
        anthropic_tools(("toolu_1", "mcp__t__send", {"text": "lost"})),
        anthropic_tools(("toolu_2", "mcp__t__send", {"text": "fail"})),
        anthropic_text("Both went wrong."),
    )
    driver = RunnerDriver(ClaudeAgentRunner(options=options(anthropic_model.base_url)))
    decide = {"lost": "outcome_unknown", "fail": "run"}
    turn = await driver.turn(
        "Send two.",
        decide=lambda record: decide[json.loads(record.arguments)["text"]],  # type: ignore[return-value]
    )

    assert [r.status for r in turn.records] == ["outcome_unknown", "failed"]
    assert tool_log.count("send") == 1  # only "fail" ran; "lost" was never run again
    lost = tool_result(anthropic_model.requests[1].messages, "toolu_1")
    assert result_text(lost) == core_texts.OUTCOME_UNKNOWN_TEXT and lost.get("is_error") is True
    failed = tool_result(anthropic_model.requests[2].messages, "toolu_2")
    assert result_text(failed) == f"{core_texts.TOOL_CALL_FAILED_PREFIX}mailbox full"
    assert turn.new_messages[-1].text == "Both went wrong."


async def test_a_read_tool_stays_in_the_harness_and_a_second_write_waits_its_turn(
    anthropic_model: ScriptedAnthropicServer, tool_log: ToolRunLog
) -> None:
    anthropic_model.enqueue(
        anthropic_tools(
            ("toolu_1", "mcp__t__send", {"text": "one"}),
            ("toolu_2", "mcp__t__send", {"text": "two"}),
            ("toolu_3", "mcp__t__lookup", {"q": "x"}),
        ),
        anthropic_tools(("toolu_4", "mcp__t__send", {"text": "two"})),
        anthropic_text("Both sent."),
    )
    driver = RunnerDriver(ClaudeAgentRunner(options=options(anthropic_model.base_url)))
    turn = await driver.turn("Send one and two, look up x.")

    requested = [o for o in turn.outcomes if isinstance(o, ToolCallsRequested)]
    assert [[c.tool_call_id for c in o.tool_calls] for o in requested] == [["toolu_1"], ["toolu_4"]]
    assert [e["text"] for e in tool_log.entries("send")] == ["one", "two"]
    assert tool_log.count("lookup") == 1
    seen = anthropic_model.requests[1].messages
    assert result_text(tool_result(seen, "toolu_1")) == "sent one"
    assert result_text(tool_result(seen, "toolu_3")) == "found x"
    refused = tool_result(seen, "toolu_2")
    assert refused.get("is_error") is True and ONE_WRITE_AT_A_TIME in result_text(refused)
    assert turn.new_messages[-1].text == "Both sent."
    # Every call and every result is stored once, across the turn's three CLI runs.
    assert [(m.role, m.tool_call_id) for m in turn.new_messages[:-1]] == [
        ("assistant", "toolu_1"), ("assistant", "toolu_2"), ("assistant", "toolu_3"),
        ("tool", "toolu_2"), ("tool", "toolu_3"), ("tool", "toolu_1"),
        ("assistant", "toolu_4"), ("tool", "toolu_4"),
    ]  # fmt: skip


async def test_tool_policies_choose_the_step_or_keep_a_tool_in_the_harness(
    anthropic_model: ScriptedAnthropicServer, tool_log: ToolRunLog
) -> None:
    anthropic_model.enqueue(
        anthropic_tools(("toolu_1", "mcp__t__send", {"text": "a"})),
        anthropic_text("Sent a."),
        anthropic_tools(("toolu_2", "mcp__t__send", {"text": "b"})),
        anthropic_text("Sent b."),
        anthropic_tools(("toolu_3", "mcp__t__lookup", {"q": "c"})),
        anthropic_text("Found c."),
    )
    runner = ClaudeAgentRunner(options=options(anthropic_model.base_url))
    driver = RunnerDriver(runner, tool_policies={"mcp__t__send": ToolPolicy("idempotent_write")})
    first = await driver.turn("Send a.")
    (requested, _) = first.outcomes
    assert isinstance(requested, ToolCallsRequested)
    assert requested.tool_calls[0].policy == ToolPolicy("idempotent_write", False)
    assert [r.effect for r in first.records] == ["idempotent_write"]

    # Declared read by its policy, the same tool runs inside the CLI run: no tool Step.
    driver.tool_policies = {"mcp__t__send": ToolPolicy("read")}
    second = await driver.turn("Send b.")
    assert len(second.outcomes) == 1 and second.records == []
    assert [(e["text"], e["key"]) for e in tool_log.entries("send")] == [
        ("a", "session-1/turn-1/toolu_1"),
        ("b", None),  # run by the CLI, outside any tool Step
    ]
    assert [m.tool_output for m in second.new_messages if m.role == "tool"] == ["sent b"]

    # A read tool whose policy asks for approval becomes a CallTool Step too.
    driver.tool_policies = {"mcp__t__lookup": ToolPolicy(requires_approval=True)}
    third = await driver.turn("Look up c.")
    assert [(r.tool_name, r.effect, r.requires_approval) for r in third.records] == [
        ("mcp__t__lookup", "read", True)
    ]
    assert [m.tool_output for m in third.new_messages if m.role == "tool"] == ["found c"]
    assert tool_log.count("lookup") == 1


async def test_the_applications_hooks_still_run_and_only_the_runner_may_defer(
    anthropic_model: ScriptedAnthropicServer, tool_log: ToolRunLog
) -> None:
    asked: list[str | None] = []

    async def defer_lookups(
        data: HookInput, tool_use_id: str | None, _: HookContext
    ) -> HookJSONOutput:
        asked.append(tool_use_id)
        output = {"hookEventName": "PreToolUse", "permissionDecision": "defer"}
        return {"hookSpecificOutput": output}  # type: ignore[typeddict-item]

    anthropic_model.enqueue(anthropic_tools(("toolu_1", "mcp__t__lookup", {"q": "x"})))
    hooks = {"PreToolUse": [HookMatcher(matcher="mcp__t__lookup", hooks=[defer_lookups])]}
    given = dataclasses.replace(options(anthropic_model.base_url), hooks=hooks)  # type: ignore[arg-type]
    driver = RunnerDriver(ClaudeAgentRunner(options=given))
    with pytest.raises(HarnessTurnError, match=r"deferred a tool call the runner does not run"):
        await driver.turn("Look up x.")
    assert asked == ["toolu_1"] and tool_log.count("lookup") == 0


async def test_a_retried_resumed_run_gets_the_recorded_result_again_without_running_the_write(
    anthropic_model: ScriptedAnthropicServer, tool_log: ToolRunLog
) -> None:
    anthropic_model.enqueue(
        anthropic_tools(("toolu_1", "mcp__t__send", {"text": "once"})),
        *[anthropic_text("bad request", status=400)] * 3,
        anthropic_text("Sent once."),
    )
    driver = RunnerDriver(ClaudeAgentRunner(options=options(anthropic_model.base_url)))
    turn_id = driver.start_turn("Send once.")
    requested = await driver.model_step(turn_id, None)
    assert isinstance(requested, ToolCallsRequested)
    await driver.run_tools(turn_id, requested)
    with pytest.raises(
        HarnessTurnError, match="400 bad request"
    ):  # the resumed run's first attempt fails
        await driver.model_step(turn_id, requested.framework_run_state)
    final = await driver.model_step(turn_id, requested.framework_run_state)  # RunModel's retry

    assert isinstance(final, TurnCompleted) and final.new_messages[-1].text == "Sent once."
    assert tool_log.count("send") == 1
    for request in anthropic_model.requests[1:]:  # both attempts got the recorded result
        assert result_text(tool_result(request.messages, "toolu_1")) == "sent once"
    assert [m.tool_output for m in final.new_messages if m.role == "tool"] == ["sent once"]
