"""Compaction: token estimates, cutoffs that keep tool calls with their results, summaries."""

from __future__ import annotations

from typing import Any

from dex_agents.runner import ContextSummaryRequest, FrameworkMessage
from dex_agents.stepwise import AgentDefinition, ModelClient, StepwiseRunner, left_out_note
from dex_agents.stepwise.compaction import cut_points, render
from dex_agents.stepwise.items import to_framework_message
from dex_agents.testing import ScriptedModelServer, ScriptedUsage, reply_text
from dex_agents.types import AgentMessage, AgentUsage, ContextSummary

from .conftest import LITELLM_NOISE, Events, Session, request_messages

pytestmark = LITELLM_NOISE


def user(text: str) -> FrameworkMessage:
    return to_framework_message({"role": "user", "content": text})


def answer(text: str) -> FrameworkMessage:
    return to_framework_message({"role": "assistant", "content": text})


def calls(*ids: str) -> FrameworkMessage:
    return to_framework_message(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": i,
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"q":"x"}'},
                }
                for i in ids
            ],
        }
    )


def result(tool_call_id: str, text: str = "found") -> FrameworkMessage:
    return to_framework_message(
        {"role": "tool", "tool_call_id": tool_call_id, "name": "lookup", "content": text}
    )


def history(*messages: FrameworkMessage) -> list[AgentMessage]:
    session = Session()
    session.store(messages, "turn-0")
    return session.messages


def runner_for(client: ModelClient, **fields: Any) -> StepwiseRunner:
    return StepwiseRunner(AgentDefinition("Assistant", "Be brief.", model=client, **fields))


def test_cuts_never_separate_a_tool_call_from_its_result() -> None:
    messages = history(
        user("q1"),  # 0
        calls("a", "b"),  # 1
        result("a"),  # 2
        result("b"),  # 3
        answer("r1"),  # 4
        user("q2"),  # 5
        calls("c"),  # 6
        result("c"),  # 7
        user("q3"),  # 8
    )
    assert cut_points(messages) == [0, 3, 4, 5, 7]


def test_select_cutoff_keeps_the_newest_messages_within_the_budget(
    model_client: ModelClient,
) -> None:
    runner = runner_for(model_client)
    words = " ".join(["alpha"] * 200)
    session = Session()
    session.store(
        [
            user(words),
            answer(words),
            user(words),
            calls("a"),
            result("a", words),
            answer("short"),
            user("last"),
        ]
    )
    turn = session.turn()
    assert runner.select_compaction_cutoff(turn, 10_000) == 1
    assert runner.select_compaction_cutoff(turn, 400) == 3
    # No cut after sequence 4, which would separate the tool call from its result.
    assert runner.select_compaction_cutoff(turn, 100) == 5
    assert runner.select_compaction_cutoff(turn, 0) == 6
    lone = Session()
    lone.store([user("only")])
    assert runner.select_compaction_cutoff(lone.turn(), 0) is None


def test_estimate_input_tokens_counts_the_whole_next_request(model_client: ModelClient) -> None:
    runner = runner_for(model_client)
    session = Session()
    session.store([user("hello")])
    small = runner.estimate_input_tokens(session.turn())
    session.store([answer(" ".join(["word"] * 500)), user("more")])
    large = runner.estimate_input_tokens(session.turn())
    assert 0 < small < large
    assert large - small >= 400


def summary_request(
    messages: list[AgentMessage], previous: ContextSummary | None, budget: int
) -> ContextSummaryRequest:
    return ContextSummaryRequest(
        flow_id="session-1",
        turn_id="turn-9",
        attempt=1,
        previous_summary=previous,
        messages=messages,
        through_sequence=messages[-1].sequence,
        events=Events(),
        heartbeat=lambda: None,
        input_token_budget=budget,
    )


async def test_summarize_starts_with_the_previous_summary(
    server: ScriptedModelServer, model_client: ModelClient
) -> None:
    server.enqueue(
        reply_text("  The user asked q1; lookup found it.  ", usage=ScriptedUsage(50, 9))
    )
    runner = runner_for(model_client)
    previous = ContextSummary(generation=1, last_sequence=2, text="Earlier: hi.", created_at="x")
    messages = history(user("q1"), calls("a"), result("a"), answer("r1"))
    summary = await runner.summarize_context(summary_request(messages, previous, 100_000))
    assert summary.text == "The user asked q1; lookup found it."
    assert summary.usage == AgentUsage(model_calls=1, input_tokens=50, output_tokens=9)
    assert summary.model_call_metadata is not None
    assert summary.model_call_metadata.provider_name == "openai"
    sent = request_messages(server)
    assert sent[0] == {
        "role": "user",
        "content": "[Dex] Summary of the earlier conversation:\nEarlier: hi.",
    }
    body = sent[1]["content"]
    assert body.startswith(
        'User: q1\n\nAssistant called lookup with {"q":"x"}\n\nTool result (lookup): found'
        "\n\nAssistant: r1\n\nSummarize the conversation above"
    )
    assert "tools" not in server.requests[0].body


async def test_summarize_leaves_out_what_does_not_fit(
    server: ScriptedModelServer, model_client: ModelClient
) -> None:
    words = " ".join(["alpha"] * 300)
    messages = history(
        user(words), answer(words), user(words), calls("a"), result("a", words), answer("ok")
    )
    runner = runner_for(model_client, max_output_tokens=1000)
    server.enqueue(reply_text("s1"), reply_text("s2"), reply_text("s3"))

    # Room for everything but the first message: one message is left out.
    await runner.summarize_context(summary_request(messages, None, 1000 + 1100))
    first = request_messages(server, 0)
    assert len(first) == 1
    assert first[0]["content"].startswith(
        "[Dex] 1 earlier message did not fit in this request and is left out.\n\nAssistant: alpha"
    )

    # Less room: the cut moves past the tool call and its result, never between them.
    await runner.summarize_context(summary_request(messages, None, 1000 + 200))
    second = request_messages(server, 1)[0]["content"]
    assert second.startswith(
        "[Dex] 5 earlier messages did not fit in this request and are left out.\n\nAssistant: ok"
    )

    await runner.summarize_context(summary_request(messages, None, 100_000))
    assert "did not fit" not in request_messages(server, 2)[0]["content"]


def test_left_out_notes() -> None:
    assert (
        left_out_note(1) == "[Dex] 1 earlier message did not fit in this request and is left out."
    )
    assert left_out_note(3) == (
        "[Dex] 3 earlier messages did not fit in this request and are left out."
    )


def test_render() -> None:
    assert render({"role": "assistant", "content": "hi", "tool_calls": []}) == "Assistant: hi"
    assert render({"role": "assistant", "content": None}) == "Assistant: (no text)"
    assert render({"role": "user", "content": [{"type": "text", "text": "a"}]}) == "User: a"
