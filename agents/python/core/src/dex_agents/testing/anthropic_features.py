"""The shared features suite (`features.py`) against runners that drive the Claude Code CLI.

The suite scripts OpenAI-shaped replies with the tools' plain names. The Claude Agent SDK
adapters (Python and TypeScript) give the CLI their tools as in-process MCP servers, so the
model sees `mcp__<server key>__<tool>`: `FeatureAnthropicServer` answers the CLI with the
suite's replies as Anthropic messages carrying the names the model sees, and
`AnthropicFeatureView` reads the CLI's requests back in the suite's terms, leaving out what
the CLI adds of its own (its system blocks, its `<system-reminder>` context).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from typing import Any

from .anthropic_server import AnthropicReply, AnthropicToolUse, ScriptedAnthropicServer, Side
from .model_server import ScriptedReply

CLI_SYSTEM_PREFIXES = ("x-anthropic-billing-header:", "You are a Claude agent, built on")
"""The CLI's own system blocks, before the application's instructions."""

REMINDER = "<system-reminder>"
"""The CLI's own context in a user message (environment, date, model) or after a tool result."""


class FeatureAnthropicServer(ScriptedAnthropicServer):
    """The scripted Anthropic server that also takes the suites' OpenAI-shaped replies, their
    tool calls renamed by `model_names` (a plain name to the name the model sees: a mapping,
    which leaves other names as they are, or a function)."""

    def __init__(
        self,
        model_names: Mapping[str, str] | Callable[[str], str],
        *,
        side: Side | None = None,
    ) -> None:
        super().__init__(side=side)
        if isinstance(model_names, Mapping):
            names = dict(model_names)
            self._model_name: Callable[[str], str] = lambda name: names.get(name, name)
        else:
            self._model_name = model_names

    def enqueue(self, *replies: AnthropicReply | ScriptedReply) -> None:
        super().enqueue(*(self._anthropic(reply) for reply in replies))

    def discard_pending(self) -> int:
        with self._lock:
            count = len(self._replies)
            self._replies.clear()
            return count

    def _anthropic(self, reply: AnthropicReply | ScriptedReply) -> AnthropicReply:
        if isinstance(reply, AnthropicReply):
            return reply
        uses = tuple(
            AnthropicToolUse(call.id, self._model_name(call.name), json.loads(call.arguments))
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
    """What the model saw in one Messages API request, as the suite reads it. `runner_texts`:
    user texts the runner itself sends (a resume prompt), which are no user's."""

    def __init__(self, runner_texts: Collection[str] = ()) -> None:
        self._runner_texts = frozenset(runner_texts)

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
            and b["text"] not in self._runner_texts
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
