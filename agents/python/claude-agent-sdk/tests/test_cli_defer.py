"""What the bundled Claude Code CLI does with a PreToolUse hook that returns "defer", found
against the real CLI and kept as a test because the adapter's write Steps rest on it (see the
README's Effects and Limits): the run stops before the deferred tool runs, without a further
model call, and a resumed run asks the hook again about the same call; a hook's refusal
reaches the model only as an error tool result. A resumed run first finishes the deferred
call with a model call of its own, then answers the new prompt."""

from __future__ import annotations

import tempfile
from typing import Any

from claude_agent_sdk import (
    ClaudeAgentOptions,
    HookContext,
    HookInput,
    HookJSONOutput,
    HookMatcher,
    InMemorySessionStore,
    ResultMessage,
    create_sdk_mcp_server,
    query,
    tool,
)
from dex_agents.testing import ScriptedAnthropicServer, anthropic_text, anthropic_tools

from dex_agents_claude_agent_sdk import QUIET_CLI_ENV


async def test_defer_stops_before_the_tool_and_a_resumed_run_asks_the_hook_again(
    anthropic_model: ScriptedAnthropicServer,
) -> None:
    runs: list[dict[str, Any]] = []
    asked: list[tuple[str, str | None]] = []
    decision = {"now": "defer"}

    @tool("send_email", "Send an email.", {"to": str})
    async def send_email(args: dict[str, Any]) -> dict[str, Any]:
        runs.append(args)
        return {"content": [{"type": "text", "text": "sent"}]}

    async def gate(data: HookInput, tool_use_id: str | None, _: HookContext) -> HookJSONOutput:
        asked.append((str(data.get("tool_name")), tool_use_id))
        output: dict[str, Any] = {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision["now"],
        }
        if decision["now"] == "deny":
            output["permissionDecisionReason"] = "Recorded elsewhere: sent, id 42"
        return {"hookSpecificOutput": output}  # type: ignore[typeddict-item]

    store, cwd = InMemorySessionStore(), tempfile.mkdtemp()

    async def run(prompt: str, resume: str | None) -> ResultMessage:
        options = ClaudeAgentOptions(
            model="claude-sonnet-4-5",
            cwd=cwd,
            tools=[],
            mcp_servers={"t": create_sdk_mcp_server("t", tools=[send_email])},
            allowed_tools=["mcp__t__send_email"],
            hooks={"PreToolUse": [HookMatcher(matcher=None, hooks=[gate])]},
            session_store=store,
            resume=resume,
            env={
                **QUIET_CLI_ENV,
                "ANTHROPIC_BASE_URL": anthropic_model.base_url,
                "ANTHROPIC_AUTH_TOKEN": "scripted",
                "ANTHROPIC_API_KEY": "",
                "CLAUDE_CONFIG_DIR": tempfile.mkdtemp(),
            },
        )
        results = [m async for m in query(prompt=prompt, options=options)]
        last = results[-1]
        assert isinstance(last, ResultMessage)
        return last

    anthropic_model.enqueue(anthropic_tools(("toolu_1", "mcp__t__send_email", {"to": "bob"})))
    deferred = await run("Send it.", None)
    assert deferred.stop_reason == "tool_deferred"
    assert deferred.deferred_tool_use is not None
    assert (deferred.deferred_tool_use.id, deferred.deferred_tool_use.input) == (
        "toolu_1",
        {"to": "bob"},
    )
    assert runs == [] and len(anthropic_model.requests) == 1  # no model call after the defer

    decision["now"] = "deny"
    anthropic_model.enqueue(anthropic_text("It was sent."), anthropic_text("Noted."))
    resumed = await run("Go on.", deferred.session_id)
    assert not resumed.is_error
    # The resumed run first finishes the deferred call (one model call, told to continue),
    # then answers the new prompt (a second model call).
    assert len(anthropic_model.requests) == 3 and anthropic_model.pending == 0
    assert anthropic_model.requests[1].texts()[-1] == "Continue from where you left off."
    assert anthropic_model.requests[2].texts()[-1] == "Go on."
    assert asked == [("mcp__t__send_email", "toolu_1")] * 2  # the hook ran again on resume
    assert runs == []
    seen = anthropic_model.requests[1].messages[-1]["content"]
    result = next(block for block in seen if block.get("type") == "tool_result")
    assert result["is_error"] is True
    assert "Recorded elsewhere: sent, id 42" in str(result["content"])
