"""The features' in-process parts: the refusal of a tool named like a built-in, where a
compaction may cut (never between a tool call and its result), and what a summary request
sends. The whole features run through real Workers in test_features.py."""

from __future__ import annotations

import pytest
from dex_agents import texts
from dex_agents.runner import ContextSummaryRequest
from dex_agents.testing import RecordingEvents
from dex_agents.types import AgentMessage, ContextSummary
from pydantic_ai import Agent, UserError
from pydantic_ai.messages import ModelRequest, UserPromptPart
from pydantic_ai.models.test import TestModel

from dex_agents_pydantic_ai import PydanticAiRunner
from dex_agents_pydantic_ai.compaction import cut_points, select_cutoff, summary_messages


def _message(sequence: int, role: str, text: str = "", call: str | None = None) -> AgentMessage:
    return AgentMessage(
        sequence=sequence,
        turn_id="turn-1",
        role=role,
        text=text or None,
        tool_call_id=call,
        tool_name="get_weather" if call else None,
        tool_arguments='{"city": "Lima"}' if call and role == "assistant" else None,
        tool_output="Sunny in Lima" if call and role == "tool" else None,
        framework_item="{}",
        created_at="2026-01-01T00:00:00Z",
    )


# user, two parallel calls, their two results, the answer, the next user message
HISTORY = [
    _message(1, "user", "Weather in Lima and Quito?"),
    _message(2, "assistant", call="a"),
    _message(3, "assistant", call="b"),
    _message(4, "tool", call="a"),
    _message(5, "tool", call="b"),
    _message(6, "assistant", "Both sunny. " * 40),
    _message(7, "user", "Thanks"),
]


def test_an_agent_tool_named_like_a_built_in_is_refused() -> None:
    def write_todos(todos: list[str]) -> str:
        return "mine"

    with pytest.raises(UserError, match="'write_todos' has the name of a dex-agents built-in"):
        PydanticAiRunner(Agent(TestModel(), tools=[write_todos]))


def test_cuts_fall_only_between_whole_tool_exchanges() -> None:
    # Not after a call whose result is still to come (indexes 1, 2 and 3).
    assert cut_points(HISTORY) == [0, 4, 5]
    # The earliest cut whose later messages fit: everything after the user's question, ...
    assert select_cutoff(HISTORY, retained_token_budget=200) == 1
    # ... then the cut after both results (the answer is about 124 tokens), never between.
    assert select_cutoff(HISTORY, retained_token_budget=140) == 5
    assert select_cutoff(HISTORY, retained_token_budget=20) == 6
    assert select_cutoff(HISTORY[:3], retained_token_budget=1) == 1


def test_the_summary_request_starts_with_the_previous_summary_and_ends_with_the_instruction() -> (
    None
):
    previous = ContextSummary(
        generation=1, text="Earlier: Oslo.", first_sequence=1, last_sequence=1, created_at="x"
    )
    request = ContextSummaryRequest(
        flow_id="s",
        turn_id="turn-2",
        attempt=1,
        previous_summary=previous,
        messages=HISTORY,
        through_sequence=6,
        events=RecordingEvents(),
        heartbeat=lambda: None,
        input_token_budget=10_000,
    )
    first, last = summary_messages(request)
    assert isinstance(first, ModelRequest) and isinstance(last, ModelRequest)
    (head,) = first.parts
    assert isinstance(head, UserPromptPart)
    assert head.content == f"{texts.CONTEXT_SUMMARY_PREFIX}\nEarlier: Oslo."
    (body,) = last.parts
    assert isinstance(body, UserPromptPart) and isinstance(body.content, str)
    lines = body.content.split("\n\n")
    assert lines[0] == "User: Weather in Lima and Quito?"
    assert lines[1] == 'Assistant called get_weather with {"city": "Lima"}'
    assert lines[3] == "Tool result (get_weather): Sunny in Lima"
    assert lines[-1] == texts.CONTEXT_SUMMARY_INSTRUCTION
