"""Context compaction: where to cut the history, and the one model call that summarizes it.

A cut falls only between model responses whose tool calls all have their results before the
cut, so no summary separates a tool call from its result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from .. import texts
from ..runner import (
    ContextSummaryRequest,
    ContextSummaryResult,
    earliest_cut_within_budget,
    messages_left_out,
)
from ..types import AgentMessage
from .items import SUMMARY_PREFIX, Item, stored_item, strip_for_request, tool_calls_of, user_item
from .model import ModelClient, ModelRequest, count_text_tokens, count_tokens, stream_completion

SUMMARY_INSTRUCTION: Final = texts.CONTEXT_SUMMARY_INSTRUCTION
left_out_note = texts.context_left_out_note


def cut_points(messages: Sequence[AgentMessage]) -> list[int]:
    """Indexes i such that a cut after messages[i] separates no tool call from its result."""
    cuts: list[int] = []
    open_calls: set[str] = set()
    items = [stored_item(message) for message in messages]
    for index, item in enumerate(items):
        if item.get("role") == "tool":
            open_calls.discard(str(item.get("tool_call_id")))
        open_calls.update(str(call.get("id")) for call in tool_calls_of(item))
        following = items[index + 1] if index + 1 < len(items) else None
        if not open_calls and following is not None and following.get("role") != "tool":
            cuts.append(index)
    return cuts


def select_cutoff(
    model: str, messages: Sequence[AgentMessage], retained_token_budget: int
) -> int | None:
    """The last sequence to summarize: the earliest cut whose later messages fit in the
    retained budget, else the latest cut; None when the history has no cut."""
    cuts = cut_points(messages)
    if not cuts:  # no sizes to count
        return None
    sizes = [count_tokens(model, [strip_for_request(stored_item(m))]) for m in messages]
    return earliest_cut_within_budget(messages, cuts, sizes, retained_token_budget)


async def summarize(
    client: ModelClient,
    settings: Mapping[str, Any],
    request: ContextSummaryRequest,
    *,
    max_output_tokens: int | None,
) -> ContextSummaryResult:
    """One model call whose input starts with the previous summary, then the messages that
    fit in input_token_budget after room for the answer."""
    messages = list(request.messages)
    lines = [render(stored_item(message)) for message in messages]
    head: list[Item] = []
    if request.previous_summary is not None:
        head.append(user_item(f"{SUMMARY_PREFIX}\n{request.previous_summary.text}"))
    budget = request.input_token_budget - (max_output_tokens or 0)
    left_out = _left_out(client.model, head, lines, cut_points(messages), budget)
    body = [left_out_note(left_out)] if left_out else []
    body += lines[left_out:]
    body.append(SUMMARY_INSTRUCTION)
    reply = await stream_completion(
        client,
        ModelRequest(
            messages=[*head, user_item("\n\n".join(body))],
            settings=settings,
            max_output_tokens=max_output_tokens,
            heartbeat=request.heartbeat,
        ),
    )
    return ContextSummaryResult(
        text=reply.text.strip(), usage=reply.usage, model_call_metadata=reply.metadata
    )


def _left_out(model: str, head: list[Item], lines: list[str], cuts: list[int], budget: int) -> int:
    """How many of the oldest messages to leave out, up to a cut, so the request fits."""
    fixed = count_tokens(model, head) + count_text_tokens(model, SUMMARY_INSTRUCTION)
    sizes = [count_text_tokens(model, line) for line in lines]
    note = count_text_tokens(model, left_out_note(len(lines)))
    return messages_left_out(sizes, cuts, budget - fixed, note)


def render(item: Mapping[str, Any]) -> str:
    """One message as transcript text for the summary request."""
    role = item.get("role")
    content = _content_text(item.get("content"))
    if role == "tool":
        name = item.get("name") or item.get("tool_call_id")
        return f"Tool result ({name}): {content}"
    if role == "assistant":
        lines = [f"Assistant: {content}"] if content else []
        lines += [
            f"Assistant called {call['function']['name']} with {call['function']['arguments']}"
            for call in tool_calls_of(item)
        ]
        return "\n".join(lines) or "Assistant: (no text)"
    if role == "system":
        return f"System: {content}"
    return f"User: {content}"


def _content_text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return "" if content is None else str(content)
