"""Context compaction (CompactContext) for ADK events.

ADK counts no tokens itself, so the estimates are characters over four of what each event
carries (texts, function call names and arguments, function responses). A cut falls only
after an event that leaves no function call without its response and before an event that is
not a function response, so no summary separates a call from its response. The summary is one
call of the agent's model (the runner's copy, without client retries) on a transcript of the
covered messages, with Stepwise's instruction and summary prefix; the next Step's session then
starts with it (`session_features.with_context`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Final

from dex_agents.runner import (
    AgentTurnContext,
    ContextSummaryRequest,
    ContextSummaryResult,
    earliest_cut_within_budget,
    messages_left_out,
)
from dex_agents.texts import CONTEXT_SUMMARY_INSTRUCTION as SUMMARY_INSTRUCTION
from dex_agents.texts import CONTEXT_SUMMARY_PREFIX as SUMMARY_PREFIX
from dex_agents.texts import context_left_out_note as left_out_note
from dex_agents.types import AgentMessage, AgentUsage
from google.adk.events import Event
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.genai import types

from .events import decode_event, response_text, user_content

CHARS_PER_TOKEN: Final = 4


def text_tokens(text: str) -> int:
    return len(text) // CHARS_PER_TOKEN + 1


def event_tokens(event: Event) -> int:
    """About how many tokens the event's content takes in a request."""
    chars = 0
    for part in event.content.parts or [] if event.content else []:
        if part.text:
            chars += len(part.text)
        if part.function_call is not None:
            call = part.function_call
            chars += len(call.name or "") + len(json.dumps(call.args or {}, ensure_ascii=False))
        if part.function_response is not None:
            response = part.function_response
            chars += len(response.name or "") + len(response_text(response.response))
    return chars // CHARS_PER_TOKEN + 1


def cut_points(events: Sequence[Event]) -> list[int]:
    """Indexes i such that a cut after events[i] separates no function call from its
    response."""
    cuts: list[int] = []
    open_calls: set[str] = set()
    for index, event in enumerate(events):
        open_calls.difference_update(r.id or "" for r in event.get_function_responses())
        open_calls.update(c.id or "" for c in event.get_function_calls())
        following = events[index + 1] if index + 1 < len(events) else None
        if not open_calls and following is not None and not following.get_function_responses():
            cuts.append(index)
    return cuts


def stored(turn: AgentTurnContext, messages: Sequence[AgentMessage]) -> list[Event]:
    """The stored messages as events, parsed once per session (read-only)."""
    return [turn.parsed(m, decode_event) for m in messages]


def select_cutoff(
    turn: AgentTurnContext, messages: Sequence[AgentMessage], retained_token_budget: int
) -> int | None:
    """The last sequence to summarize: the earliest cut whose later messages fit in the
    retained budget, else the latest cut; None when the history has no cut."""
    events = stored(turn, messages)
    cuts = cut_points(events)
    if not cuts:
        return None
    sizes = [event_tokens(event) for event in events]
    return earliest_cut_within_budget(messages, cuts, sizes, retained_token_budget)


def render(event: Event) -> str:
    """One event as transcript text for the summary request."""
    parts = event.content.parts or [] if event.content else []
    text = "".join(p.text for p in parts if p.text and not p.thought)
    responses = event.get_function_responses()
    if responses:
        return "\n".join(
            f"Tool result ({r.name or r.id}): {response_text(r.response)}" for r in responses
        )
    if event.author == "user":
        return f"User: {text}"
    lines = [f"Assistant: {text}"] if text else []
    lines += [
        f"Assistant called {c.name} with {json.dumps(c.args or {}, ensure_ascii=False)}"
        for c in event.get_function_calls()
    ]
    return "\n".join(lines) or "Assistant: (no text)"


def summary_contents(request: ContextSummaryRequest) -> list[types.Content]:
    """The previous summary, then the transcript of the covered messages (the oldest left out,
    up to a cut, when they do not fit in the request's budget) and the instruction."""
    head: list[types.Content] = []
    fixed = text_tokens(SUMMARY_INSTRUCTION)
    if request.previous_summary is not None:
        previous = f"{SUMMARY_PREFIX}\n{request.previous_summary.text}"
        head.append(user_content(previous))
        fixed += text_tokens(previous)
    events = [decode_event(m.framework_item) for m in request.messages]
    lines = [render(event) for event in events]
    left_out = _left_out(lines, cut_points(events), request.input_token_budget - fixed)
    body = [left_out_note(left_out)] if left_out else []
    body += [*lines[left_out:], SUMMARY_INSTRUCTION]
    return [*head, user_content("\n\n".join(body))]


def _left_out(lines: list[str], cuts: list[int], budget: int) -> int:
    sizes = [text_tokens(line) for line in lines]
    return messages_left_out(sizes, cuts, budget, text_tokens(left_out_note(len(lines))))


async def summarize(
    model: BaseLlm, model_name: str | None, request: ContextSummaryRequest
) -> ContextSummaryResult:
    """One call of `model` (as `model_name` when given) on the summary request."""
    llm_request = LlmRequest(
        model=model_name or model.model,
        contents=summary_contents(request),
        config=types.GenerateContentConfig(),
    )
    texts: list[str] = []
    usage = AgentUsage()
    async for response in model.generate_content_async(llm_request, stream=False):
        request.heartbeat()
        if response.partial:
            continue
        parts = response.content.parts or [] if response.content else []
        texts += [p.text for p in parts if p.text and not p.thought]
        metadata = response.usage_metadata
        usage = usage.plus(
            AgentUsage(
                model_calls=1,
                input_tokens=(metadata.prompt_token_count or 0) if metadata else 0,
                output_tokens=(metadata.candidates_token_count or 0) if metadata else 0,
            )
        )
    return ContextSummaryResult(text="".join(texts).strip(), usage=usage)
