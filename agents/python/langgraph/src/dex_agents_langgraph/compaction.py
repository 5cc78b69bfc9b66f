"""Context compaction (CompactContext) for LangChain messages.

The summary is one call of the agent's chat model (or the runner's `summary_model`) on a
transcript of the messages it covers, with the same instruction and summary prefix as Stepwise
(`dex_agents.texts`); the oldest whole turns that would not fit in the request's input budget
are left out, with the note Stepwise writes.
The turn's history then starts with the summary as a user message, followed by the stored
messages after it. A cut falls only before a user message (a turn boundary), so no summary
separates a tool call from its result, and never after a message of the active turn.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from dex_agents import texts
from dex_agents.runner import (
    AgentTurnContext,
    ContextSummaryRequest,
    earliest_cut_within_budget,
    messages_left_out,
)
from dex_agents.types import AgentMessage, ContextSummary
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately

from .messages import decode_message


def summary_message(summary: ContextSummary) -> HumanMessage:
    return HumanMessage(f"{texts.CONTEXT_SUMMARY_PREFIX}\n{summary.text}")


def with_summary(turn: AgentTurnContext, history: list[BaseMessage]) -> list[BaseMessage]:
    """The turn's history, behind the session's summary when there is one."""
    if turn.context_summary is None:
        return history
    return [summary_message(turn.context_summary), *history]


def select_cutoff(
    turn: AgentTurnContext, messages: Sequence[AgentMessage], retained_token_budget: int
) -> int | None:
    """The last sequence to summarize: the earliest turn boundary whose later messages fit in
    the budget, else the latest one (at the latest, just before the active turn's first
    message); None when there is none."""
    cuts = [
        index
        for index in range(len(messages) - 1)
        if messages[index + 1].role == "user" and messages[index].turn_id != turn.turn_id
    ]
    if not cuts:  # no sizes to count
        return None
    sizes = [count_tokens_approximately([turn.parsed(m, decode_message)]) for m in messages]
    return earliest_cut_within_budget(messages, cuts, sizes, retained_token_budget)


def render(message: BaseMessage) -> str:
    """One message as transcript text for the summary request."""
    if isinstance(message, ToolMessage):
        return f"Tool result ({message.name or message.tool_call_id}): {message.text}"
    if isinstance(message, AIMessage):
        lines = [f"Assistant: {message.text}"] if message.text else []
        lines += [
            f"Assistant called {call['name']} with {json.dumps(call['args'], ensure_ascii=False)}"
            for call in message.tool_calls
        ]
        return "\n".join(lines) or "Assistant: (no text)"
    return f"User: {message.text}"


def summary_request(request: ContextSummaryRequest) -> list[BaseMessage]:
    """The summary call's messages: the previous summary, then the transcript (without the
    oldest turns that would not fit in `input_token_budget`) and the instruction."""
    head: list[BaseMessage] = []
    if request.previous_summary is not None:
        head.append(summary_message(request.previous_summary))
    lines = [render(decode_message(m.framework_item)) for m in request.messages]
    cuts = [i for i in range(len(lines) - 1) if request.messages[i + 1].role == "user"]
    left_out = _left_out(head, lines, cuts, request.input_token_budget)
    body = [texts.context_left_out_note(left_out)] if left_out else []
    body += [*lines[left_out:], texts.CONTEXT_SUMMARY_INSTRUCTION]
    return [*head, HumanMessage("\n\n".join(body))]


def _left_out(head: list[BaseMessage], lines: list[str], cuts: list[int], budget: int) -> int:
    """How many of the oldest messages to leave out, up to a turn boundary, so the request
    fits (LangChain's approximate count)."""
    fixed = count_tokens_approximately([*head, HumanMessage(texts.CONTEXT_SUMMARY_INSTRUCTION)])
    sizes = [count_tokens_approximately([HumanMessage(line)]) for line in lines]
    note = count_tokens_approximately([HumanMessage(texts.context_left_out_note(len(lines)))])
    return messages_left_out(sizes, cuts, budget - fixed, note)
