"""Context compaction for Pydantic AI runs: the input estimate, the cut, and the summary call.

Sizes are estimated from text, about four characters a token (Pydantic AI counts no tokens
before a request). A cut falls only where every tool call before it has its result before it,
so a summary never separates a call from its result. The summary is one request to the
session's model with Pydantic AI's `model_request`: no tools, no instructions, the transcript
and the summary instruction as user text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from dex_agents import texts
from dex_agents.runner import ContextSummaryRequest, earliest_cut_within_budget, messages_left_out
from dex_agents.types import AgentMessage
from pydantic_ai.direct import model_request
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

CHARS_PER_TOKEN: Final = 4
MESSAGE_OVERHEAD_TOKENS: Final = 4


def text_tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def history_tokens(messages: Sequence[ModelMessage]) -> int:
    return sum(MESSAGE_OVERHEAD_TOKENS + text_tokens(_text(message)) for message in messages)


def _text(message: ModelMessage) -> str:
    pieces: list[str] = []
    for part in message.parts:
        if isinstance(part, UserPromptPart):
            content = part.content
            pieces.append(
                content
                if isinstance(content, str)
                else "".join(c for c in content if isinstance(c, str))
            )
        elif isinstance(part, SystemPromptPart | TextPart | ThinkingPart):
            pieces.append(part.content)
        elif isinstance(part, ToolCallPart):
            pieces.append(part.tool_name + part.args_as_json_str())
        elif isinstance(part, ToolReturnPart):
            pieces.append(part.model_response_str())
        elif isinstance(part, RetryPromptPart):
            pieces.append(part.model_response())
    return "".join(pieces)


def stored_tokens(message: AgentMessage) -> int:
    text = (message.text or "") + (message.tool_arguments or "") + (message.tool_output or "")
    return MESSAGE_OVERHEAD_TOKENS + text_tokens(text)


def cut_points(messages: Sequence[AgentMessage]) -> list[int]:
    """Indexes i such that a cut after messages[i] separates no tool call from its result.
    Each stored message carries at most one tool call or one tool result."""
    cuts: list[int] = []
    open_calls: set[str] = set()
    for index, message in enumerate(messages):
        if message.role == "tool" and message.tool_call_id:
            open_calls.discard(message.tool_call_id)
        elif message.role == "assistant" and message.tool_call_id:
            open_calls.add(message.tool_call_id)
        following = messages[index + 1] if index + 1 < len(messages) else None
        if not open_calls and following is not None and following.role != "tool":
            cuts.append(index)
    return cuts


def select_cutoff(messages: Sequence[AgentMessage], retained_token_budget: int) -> int | None:
    sizes = [stored_tokens(message) for message in messages]
    return earliest_cut_within_budget(messages, cut_points(messages), sizes, retained_token_budget)


def render(message: AgentMessage) -> str:
    """One stored message as transcript text for the summary request."""
    if message.role == "tool":
        return f"Tool result ({message.tool_name}): {message.tool_output or ''}"
    if message.role == "assistant":
        if message.tool_call_id and message.tool_name:
            return f"Assistant called {message.tool_name} with {message.tool_arguments or '{}'}"
        return f"Assistant: {message.text or '(no text)'}"
    return f"User: {message.text or ''}"


def summary_messages(request: ContextSummaryRequest) -> list[ModelMessage]:
    """The previous summary, then the messages that fit the input budget (the oldest left
    out, up to a cut, with a note saying how many), then the summary instruction."""
    head: list[ModelMessage] = []
    if request.previous_summary is not None:
        previous = f"{texts.CONTEXT_SUMMARY_PREFIX}\n{request.previous_summary.text}"
        head.append(ModelRequest(parts=[UserPromptPart(previous)]))
    messages = list(request.messages)
    lines = [render(message) for message in messages]
    fixed = history_tokens(head) + text_tokens(texts.CONTEXT_SUMMARY_INSTRUCTION)
    left_out = _left_out(lines, cut_points(messages), request.input_token_budget - fixed)
    body = [texts.context_left_out_note(left_out)] if left_out else []
    body += [*lines[left_out:], texts.CONTEXT_SUMMARY_INSTRUCTION]
    return [*head, ModelRequest(parts=[UserPromptPart("\n\n".join(body))])]


def _left_out(lines: list[str], cuts: list[int], budget: int) -> int:
    sizes = [text_tokens(line) for line in lines]
    note = text_tokens(texts.context_left_out_note(len(lines)))
    return messages_left_out(sizes, cuts, budget, note)


async def summarize(
    model: Model | str, request: ContextSummaryRequest, settings: ModelSettings | None
) -> ModelResponse:
    return await model_request(model, summary_messages(request), model_settings=settings)


def response_text(response: ModelResponse) -> str:
    return "".join(part.content for part in response.parts if isinstance(part, TextPart)).strip()
