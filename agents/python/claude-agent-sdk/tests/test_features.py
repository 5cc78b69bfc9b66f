"""The shared features suite (`dex_agents.testing.features`) on the Claude Agent SDK runner,
through one real Worker per backend, the real Claude Code CLI and the scripted Anthropic
server: built-in tools (a question across a Worker restart, a durable wait that outlives the
Worker), plan mode, and session settings. Compaction and the MCP tool source are not offered
by this runner (README, Limits): the suite skips those rows.

The suite scripts OpenAI-shaped replies with the tools' plain names; `FeatureAnthropicServer`
answers the CLI with them as Anthropic messages whose tool calls carry the names the model sees
(`mcp__<server key>__<tool>`), and `AnthropicFeatureView` reads the CLI's requests back in the
suite's terms."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest
from dex_agents.builtins import BUILT_IN_TOOL_NAMES
from dex_agents.testing import ScriptedAnthropicServer
from dex_agents.testing.anthropic_server import AnthropicReply, AnthropicToolUse, no_tools
from dex_agents.testing.features import FeatureApp, FeatureSuite
from dex_agents.testing.model_server import ScriptedReply

from dex_agents_claude_agent_sdk.built_ins import SERVER_KEY as BUILT_INS_KEY
from tests.apps.features import SERVER_KEY as APP_KEY

MODEL_NAMES: Mapping[str, str] = {
    "get_weather": f"mcp__{APP_KEY}__get_weather",
    **{name: f"mcp__{BUILT_INS_KEY}__{name}" for name in BUILT_IN_TOOL_NAMES},
}
"""The names the model sees for the tools the suite names."""

CLI_SYSTEM_PREFIXES = ("x-anthropic-billing-header:", "You are a Claude agent, built on")
"""The CLI's own system blocks, before the application's instructions."""

REMINDER = "<system-reminder>"
"""The CLI's own context in a user message (environment, date, model)."""


class FeatureAnthropicServer(ScriptedAnthropicServer):
    """The scripted Anthropic server that also takes the suite's OpenAI-shaped replies."""

    def enqueue(self, *replies: AnthropicReply | ScriptedReply) -> None:  # type: ignore[override]
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
            b["tool_use_id"]: _text(b.get("content") or "")
            for m in self._messages(request, "user")
            for b in _blocks(m["content"])
            if b.get("type") == "tool_result"
        }

    def user_texts(self, request: Any) -> list[str]:
        return [
            b["text"]
            for m in self._messages(request, "user")
            for b in _blocks(m["content"])
            if b.get("type") == "text" and not b["text"].startswith(REMINDER)
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


class TestClaudeFeatures(FeatureSuite):
    app = FeatureApp(
        worker_target="tests.apps.features:flows",
        worker_cwd=Path(__file__).parent.parent,
        model_view=AnthropicFeatureView(),
    )
    supports_compaction: ClassVar[bool] = False
    supports_mcp: ClassVar[bool] = False
    unsupported_reason: ClassVar[str] = (
        "the Claude Code CLI compacts its own transcript, and the runner takes no "
        "McpToolSource (only in-process SDK MCP servers): see the README's Limits"
    )

    @pytest.fixture(scope="class")
    @classmethod
    def shared_model(cls, shared_database: str) -> Iterator[FeatureAnthropicServer]:  # type: ignore[override]
        with FeatureAnthropicServer(side=no_tools) as server:
            yield server
