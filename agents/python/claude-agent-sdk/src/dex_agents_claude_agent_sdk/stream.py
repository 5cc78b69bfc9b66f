"""What a turn reports from the SDK's stream messages: text deltas, tool calls and results,
the final answer, usage and cost. A call of a built-in is stored under the built-in's own name
(`ask_user`), as the session records it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

from claude_agent_sdk import (
    AssistantMessage,
    Message,
    ResultMessage,
    StreamEvent,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from dex_agents.runner import AgentTurnContext, FrameworkMessage
from dex_agents.types import AgentUsage

from .built_ins import built_in_of


@dataclass
class TurnRecorder:
    """Collects one CLI run's messages as the turn's stored messages and usage."""

    turn: AgentTurnContext
    built_ins: tuple[str, ...] = ()
    """The built-ins the run offers (their calls are stored under the built-in's name)."""
    messages: list[FrameworkMessage] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    model_calls: int = 0
    results: list[ResultMessage] = field(default_factory=list)

    def observe(self, message: Message) -> None:
        if isinstance(message, StreamEvent):
            self._stream_event(message)
        elif isinstance(message, AssistantMessage) and message.parent_tool_use_id is None:
            self._assistant(message)
        elif isinstance(message, UserMessage) and message.parent_tool_use_id is None:
            self._tool_results(message)
        elif isinstance(message, ResultMessage):
            self.results.append(message)

    @property
    def result(self) -> ResultMessage | None:
        """The run's answer: its first error result if any, else its last result with a stop
        reason. A run that resumes a deferred call reports two results: the finished call's,
        then the blank prompt's (no model call, no stop reason)."""
        failed = [result for result in self.results if result.is_error]
        if failed:
            return failed[0]
        answered = [result for result in self.results if result.stop_reason is not None]
        found = answered or self.results
        return found[-1] if found else None

    def _stream_event(self, message: StreamEvent) -> None:
        event = message.event
        if message.parent_tool_use_id is not None:
            return
        if event.get("type") == "message_start":
            self.model_calls += 1
        delta = event.get("delta") if event.get("type") == "content_block_delta" else None
        if isinstance(delta, dict) and delta.get("type") == "text_delta":
            self.turn.events.write("text_delta", {"text": str(delta.get("text", ""))})

    def _assistant(self, message: AssistantMessage) -> None:
        for block in message.content:
            if isinstance(block, TextBlock):
                self.texts.append(block.text)
            elif isinstance(block, ToolUseBlock):
                arguments = json.dumps(block.input)
                self.messages.append(
                    FrameworkMessage(
                        role="assistant",
                        framework_item=json.dumps({"tool_use": block.id}),
                        tool_call_id=block.id,
                        tool_name=built_in_of(block.name, self.built_ins) or block.name,
                        tool_arguments=arguments,
                    )
                )

    def _tool_results(self, message: UserMessage) -> None:
        if isinstance(message.content, str):
            return
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                self.messages.append(
                    FrameworkMessage(
                        role="tool",
                        framework_item=json.dumps({"tool_result": block.tool_use_id}),
                        tool_call_id=block.tool_use_id,
                        tool_output=_output_text(block),
                    )
                )

    def final_text(self) -> str:
        if self.result is not None and self.result.result is not None:
            return self.result.result
        return self.texts[-1] if self.texts else ""

    def usage(self) -> AgentUsage:
        usage = (self.result.usage if self.result else None) or {}
        return AgentUsage(
            model_calls=self.model_calls,
            input_tokens=int(usage.get("input_tokens") or 0),
            output_tokens=int(usage.get("output_tokens") or 0),
            cached_input_tokens=int(usage.get("cache_read_input_tokens") or 0),
        )


def with_tool_names(messages: list[FrameworkMessage]) -> list[FrameworkMessage]:
    """`messages` with each tool result named as its call: the CLI's result carries only the
    tool_use ID, and a deferred call's result comes in a later run than the call."""
    names = {m.tool_call_id: m.tool_name for m in messages if m.role == "assistant"}
    return [
        replace(m, tool_name=names.get(m.tool_call_id))
        if m.role == "tool" and m.tool_name is None and m.tool_call_id in names
        else m
        for m in messages
    ]


def _output_text(block: ToolResultBlock) -> str:
    content = block.content
    if content is None or isinstance(content, str):
        return content or ""
    parts = [str(item.get("text", "")) for item in content if item.get("type") == "text"]
    return "".join(parts) if parts else json.dumps(content)
