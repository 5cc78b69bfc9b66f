"""What a model Step reports while and after ADK runs: streamed deltas, transfers between
agents and usage."""

from __future__ import annotations

from collections.abc import Sequence

from dex_agents.runner import AgentTurnContext
from dex_agents.types import AgentUsage
from google.adk.events import Event

from .transfers import TRANSFER_EVENT, transfer_payload


def usage_of(events: Sequence[Event]) -> AgentUsage:
    """The usage of the model calls that made `events` (one per model response)."""
    total = AgentUsage()
    for event in events:
        if event.partial or event.content is None or event.content.role != "model":
            continue
        usage = event.usage_metadata
        total = total.plus(
            AgentUsage(
                model_calls=1,
                input_tokens=(usage.prompt_token_count or 0) if usage else 0,
                output_tokens=(usage.candidates_token_count or 0) if usage else 0,
                cached_input_tokens=(usage.cached_content_token_count or 0) if usage else 0,
                reasoning_tokens=(usage.thoughts_token_count or 0) if usage else 0,
            )
        )
    return total


def report_event(turn: AgentTurnContext, event: Event) -> None:
    """Writes a partial event's deltas, and a transfer between agents."""
    if event.partial:
        write_deltas(turn, event)
        return
    transfer = transfer_payload(event)
    if transfer is not None:
        turn.events.write(TRANSFER_EVENT, transfer)


def write_deltas(turn: AgentTurnContext, event: Event) -> None:
    for part in event.content.parts or [] if event.content else []:
        if part.text and part.thought:
            turn.events.write("reasoning_delta", {"text": part.text})
        elif part.text:
            turn.events.write("text_delta", {"text": part.text})
