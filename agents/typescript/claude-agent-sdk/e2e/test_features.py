"""The shared session-features suite (`dex_agents.testing.features`) on the Claude Agent SDK
runner, through a real Python Worker calling it in a real Node process (features_flows.py), the
real Claude Code CLI and the scripted Anthropic server: the built-ins (a question across a
Worker restart, a durable wait that outlives the Worker), plan mode and session settings.
Compaction and the MCP tool source are not offered by this runner (README, Session features):
the suite skips those rows with the reason.

With them, on the same Worker, the README's example as it is written (readme-example.ts): the
refund waits for approval, runs once in its tool Step, and the next turn's read sees it done.

The suite scripts OpenAI-shaped replies with the tools' plain names; `FeatureAnthropicServer`
answers the CLI with them as Anthropic messages whose tool calls carry the names the model sees
(`mcp__matrix__get_weather`, `mcp__dex__<built-in>`), and `AnthropicFeatureView` reads the
CLI's requests back in the suite's terms."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest
from dex_agents.builtins import BUILT_IN_TOOL_NAMES
from dex_agents.testing.anthropic_server import (
    AnthropicReply,
    AnthropicToolUse,
    ScriptedAnthropicServer,
    anthropic_text,
    anthropic_tools,
    no_tools,
)
from dex_agents.testing.features import FeatureApp, FeatureSuite
from dex_agents.testing.model_server import ScriptedReply
from dex_agents.testing.sessions import pending_interrupt, step_types, turns_done
from dex_agents.testing.shared_worker import SessionRun

MODEL_NAMES: Mapping[str, str] = {
    "get_weather": "mcp__matrix__get_weather",
    **{name: f"mcp__dex__{name}" for name in BUILT_IN_TOOL_NAMES},
}
"""The names the model sees for the tools the suite names."""

CLI_SYSTEM_PREFIXES = ("x-anthropic-billing-header:", "You are a Claude agent, built on")
"""The CLI's own system blocks, before the application's instructions."""

REMINDER = "<system-reminder>"
"""The CLI's own context in a user message (environment, date, model) or after a tool result."""
RESUME_PROMPT = "Continue."
"""The runner's prompt of a run that resumes a deferred call (src/texts.ts), not a user's text."""


class FeatureAnthropicServer(ScriptedAnthropicServer):
    """The scripted Anthropic server that also takes the suite's OpenAI-shaped replies."""

    def enqueue(self, *replies: AnthropicReply | ScriptedReply) -> None:
        super().enqueue(*(_anthropic(reply) for reply in replies))

    def discard_pending(self) -> int:
        with self._lock:
            count = len(self._replies)
            self._replies.clear()
            return count


def _anthropic(reply: AnthropicReply | ScriptedReply) -> AnthropicReply:
    if isinstance(reply, AnthropicReply):
        return reply
    uses = tuple(
        AnthropicToolUse(call.id, MODEL_NAMES.get(call.name, call.name), json.loads(call.arguments))
        for call in reply.tool_calls
    )
    return AnthropicReply(text=reply.text, tool_uses=uses, hang=reply.hang, status=reply.status)


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _text(content: Any) -> str:
    return "".join(b.get("text", "") for b in _blocks(content) if b.get("type") == "text")


def _plain(name: str) -> str:
    """`mcp__<key>__<tool>` as the suite names it: `<tool>`."""
    return name.split("__", 2)[2] if name.startswith("mcp__") else name


class AnthropicFeatureView:
    """What the model saw in one Messages API request, as the suite reads it."""

    def _messages(self, request: Any, role: str) -> list[dict[str, Any]]:
        return [m for m in request.body["messages"] if m["role"] == role]

    def tool_outputs(self, request: Any) -> dict[str, str]:
        return {
            b["tool_use_id"]: _text(b.get("content") or "").split(REMINDER, 1)[0].rstrip()
            for m in self._messages(request, "user")
            for b in _blocks(m["content"])
            if b.get("type") == "tool_result"
        }

    def user_texts(self, request: Any) -> list[str]:
        return [
            b["text"]
            for m in self._messages(request, "user")
            for b in _blocks(m["content"])
            if b.get("type") == "text"
            and not b["text"].startswith(REMINDER)
            and b["text"] != RESUME_PROMPT
        ]

    def model(self, request: Any) -> str:
        return str(request.body["model"])

    def instructions(self, request: Any) -> str:
        texts = [b["text"] for b in _blocks(request.body.get("system") or [])]
        return "\n\n".join(t for t in texts if not t.startswith(CLI_SYSTEM_PREFIXES))

    def tool_names(self, request: Any) -> list[str]:
        """The tools shown to the model (a deferred-loading placeholder of the CLI is not)."""
        tools = request.body.get("tools") or []
        return [_plain(t["name"]) for t in tools if not t.get("defer_loading")]

    def tool_call_ids(self, request: Any) -> list[str]:
        return [
            b["id"]
            for m in self._messages(request, "assistant")
            for b in _blocks(m["content"])
            if b.get("type") == "tool_use"
        ]

    def first_input_text(self, request: Any) -> str:
        (first, *_) = self.user_texts(request)
        return first


class TestFeatures(FeatureSuite):
    app = FeatureApp(
        worker_target="features_flows:flows",
        worker_cwd=Path(__file__).resolve().parent,
        model_view=AnthropicFeatureView(),
    )
    supports_compaction: ClassVar[bool] = False
    supports_mcp: ClassVar[bool] = False
    unsupported_reason: ClassVar[str] = (
        "the Claude Code CLI compacts its own transcript, and the runner takes no "
        "McpToolSource (only in-process toolServers): see the README's Session features"
    )

    @pytest.fixture(scope="class")
    @classmethod
    def shared_model(cls, shared_database: str) -> Iterator[FeatureAnthropicServer]:
        with FeatureAnthropicServer(side=no_tools) as server:
            yield server

    async def test_the_readme_example_refunds_once_approved(self, run: SessionRun) -> None:
        model = run.model
        assert isinstance(model, FeatureAnthropicServer)
        model.enqueue(
            anthropic_tools(("toolu_1", "mcp__orders__refund", {"order_id": "o-42"})),
            anthropic_text("Refunded o-42."),
            anthropic_tools(("toolu_2", "mcp__orders__get_order", {"order_id": "o-42"})),
            anthropic_text("It is refunded."),
        )
        client, view = run.client, AnthropicFeatureView()
        session = await client.start_session("SupportAgent", "Refund o-42")
        await client.wait_for(session, pending_interrupt("toolu_1"))
        assert await client.resolve_interrupt(session, "toolu_1", approved=True)
        snapshot = await client.wait_for(session, turns_done(1))
        assert snapshot.messages[-1].text == "Refunded o-42."
        assert view.tool_outputs(run.requests[1]) == {"toolu_1": "refunded o-42"}
        assert view.instructions(run.requests[0]) == "You help customers."

        # The next turn's read runs in the CLI and sees the refund the tool Step made.
        assert await client.send_user_message(session, "Is it refunded?")
        snapshot = await client.wait_for(session, turns_done(2))
        assert snapshot.messages[-1].text == "It is refunded."
        assert view.tool_outputs(run.requests[3])["toolu_2"] == "order o-42: refunded"
        assert await step_types(client, session) == [
            "StartAgentSession",
            "RunModel",
            "AwaitToolApproval",
            "ResumeTurn",
            "CallSingleAttemptTool",
            "RunModel",
            "AwaitUserMessage",
            "RunModel",
            "AwaitUserMessage",
        ]
