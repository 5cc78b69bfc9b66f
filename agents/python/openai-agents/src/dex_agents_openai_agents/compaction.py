"""Context compaction for the OpenAI Agents runner: the size of the next request, where the
history may be cut, and the transcript the one summary call reads.

The SDK has no tokenizer for its Responses models, so sizes are estimated at about four
characters a token of the items' JSON text, as for a request with no tokenizer elsewhere in
dex-agents. A cut falls only where every function call before it has its output before it,
and never right after a reasoning item (the Responses API pairs it with the item that follows),
so no summary separates a tool call from its result.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from dex_agents import texts
from dex_agents.runner import (
    AgentTurnContext,
    ContextSummaryRequest,
    earliest_cut_within_budget,
    messages_left_out,
)
from dex_agents.types import AgentMessage, ContextSummary

from .items import InputItem, decode_item, user_message_item

CHARS_PER_TOKEN: Final = 4


def approximate_tokens(value: object) -> int:
    """About four characters a token of `value`'s text (its JSON text unless it is a str)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return len(text) // CHARS_PER_TOKEN + 1


def summary_input_item(summary: ContextSummary) -> InputItem:
    """The summary as the first input item of a request, after the instructions."""
    return user_message_item(f"{texts.CONTEXT_SUMMARY_PREFIX}\n{summary.text}")


def _kind(item: Mapping[str, Any]) -> str:
    kind = item.get("type")
    return kind if isinstance(kind, str) else "message"


def _is_output(item: Mapping[str, Any]) -> bool:
    return _kind(item).endswith("_output") and isinstance(item.get("call_id"), str)


def cut_points(items: Sequence[Mapping[str, Any]]) -> list[int]:
    """Indexes i such that a cut after items[i] separates no call from its output."""
    cuts: list[int] = []
    open_calls: set[str] = set()
    for index, item in enumerate(items):
        call_id = item.get("call_id")
        if _is_output(item):
            open_calls.discard(str(call_id))
        elif _kind(item).endswith("_call") and isinstance(call_id, str):
            open_calls.add(call_id)
        following = items[index + 1] if index + 1 < len(items) else None
        if following is None or open_calls or _kind(item) == "reasoning" or _is_output(following):
            continue
        cuts.append(index)
    return cuts


def select_cutoff(turn: AgentTurnContext, retained_token_budget: int) -> int | None:
    """The last sequence to summarize: the earliest cut whose later messages fit in the
    retained budget, else the latest cut; None when the history has no cut."""
    messages = turn.messages
    items = [turn.parsed(message, decode_item) for message in messages]
    cuts = cut_points(items)
    if not cuts:  # no sizes to count
        return None
    sizes = [approximate_tokens(item) for item in items]
    return earliest_cut_within_budget(messages, cuts, sizes, retained_token_budget)


def render(message: AgentMessage) -> str | None:
    """One stored message as transcript text for the summary request (None: nothing to say,
    as for a reasoning item)."""
    if message.role == "tool":
        return f"Tool result ({message.tool_name or message.tool_call_id}): {message.tool_output}"
    if message.role == "assistant":
        if message.tool_name is not None:
            arguments = message.tool_arguments or ""
            return f"Assistant called {message.tool_name} with {arguments}".rstrip()
        return f"Assistant: {message.text}" if message.text else None
    return f"User: {message.text or ''}"


def summary_input(request: ContextSummaryRequest, max_output_tokens: int | None) -> list[InputItem]:
    """The summary call's input: the previous summary, then the transcript of the messages
    that fit in the request's input budget (the oldest left out, up to a cut, when they do
    not), then the instruction."""
    head: list[InputItem] = []
    if request.previous_summary is not None:
        head.append(summary_input_item(request.previous_summary))
    messages = list(request.messages)
    lines = [render(message) for message in messages]
    items = [decode_item(message.framework_item) for message in messages]
    budget = request.input_token_budget - (max_output_tokens or 0)
    fixed = approximate_tokens(head) + approximate_tokens(texts.CONTEXT_SUMMARY_INSTRUCTION)
    left_out = _left_out(lines, cut_points(items), budget - fixed)
    body = [texts.context_left_out_note(left_out)] if left_out else []
    body += [line for line in lines[left_out:] if line is not None]
    body.append(texts.CONTEXT_SUMMARY_INSTRUCTION)
    return [*head, {"role": "user", "content": "\n\n".join(body)}]


def _left_out(lines: Sequence[str | None], cuts: Sequence[int], budget: int) -> int:
    """How many of the oldest messages to leave out, up to a cut, so the rest fit."""
    sizes = [approximate_tokens(line) if line is not None else 0 for line in lines]
    note = approximate_tokens(texts.context_left_out_note(len(lines)))
    return messages_left_out(sizes, cuts, budget, note)
