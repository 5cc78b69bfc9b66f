"""Stored messages, run state and tool effects, without a model."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic_ai import ToolDefinition
from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.usage import RequestUsage

from dex_agents_pydantic_ai.deferral import framework_effect
from dex_agents_pydantic_ai.messages import (
    load_history,
    parse_item,
    to_framework_messages,
    user_message,
)
from dex_agents_pydantic_ai.run_state import RunState

NOW = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


def conversation() -> list[ModelMessage]:
    return [
        ModelRequest(parts=[UserPromptPart("weather and order?", timestamp=NOW)], timestamp=NOW),
        ModelResponse(
            parts=[
                ThinkingPart("let me look"),
                TextPart("Checking."),
                ToolCallPart("get_weather", '{"city":"Paris"}', "call_a"),
                ToolCallPart("lookup_order", {"order_id": "o-1"}, "call_b"),
                TextPart("More soon."),
            ],
            usage=RequestUsage(input_tokens=10, output_tokens=5),
            model_name="gpt-test",
            timestamp=NOW,
        ),
        ModelRequest(
            parts=[
                ToolReturnPart("get_weather", "Sunny", "call_a", timestamp=NOW),
                ToolReturnPart("lookup_order", {"status": "shipped"}, "call_b", timestamp=NOW),
                UserPromptPart(
                    ["see ", BinaryContent(b"\x89PNG", media_type="image/png")], timestamp=NOW
                ),
            ],
            timestamp=NOW,
        ),
        ModelResponse(parts=[TextPart("Sunny; shipped.")], timestamp=NOW),
    ]


def native_json(messages: list[ModelMessage]) -> bytes:
    return ModelMessagesTypeAdapter.dump_json(messages)


def test_each_call_and_return_is_its_own_stored_message_with_projection() -> None:
    stored = to_framework_messages(conversation())

    assert [
        (m.role, m.text, m.tool_call_id, m.tool_name, m.tool_arguments, m.tool_output)
        for m in stored
    ] == [
        ("user", "weather and order?", None, None, None, None),
        ("assistant", "Checking.", None, None, None, None),
        ("assistant", None, "call_a", "get_weather", '{"city":"Paris"}', None),
        ("assistant", None, "call_b", "lookup_order", '{"order_id":"o-1"}', None),
        ("assistant", "More soon.", None, None, None, None),
        ("tool", None, "call_a", "get_weather", None, "Sunny"),
        ("tool", None, "call_b", "lookup_order", None, '{"status":"shipped"}'),
        ("user", "see ", None, None, None, None),
        ("assistant", "Sunny; shipped.", None, None, None, None),
    ]


def test_replay_merges_the_pieces_back_into_the_exact_native_history() -> None:
    original = conversation()

    replayed = load_history(to_framework_messages(original))

    assert native_json(replayed) == native_json(original)


def test_distinct_messages_stay_distinct_on_replay() -> None:
    first = user_message("one")
    second = ModelRequest(parts=[UserPromptPart("two")], timestamp=datetime.now(UTC))
    answer = ModelResponse(parts=[TextPart("a")], timestamp=NOW)
    other = ModelResponse(parts=[TextPart("b")], timestamp=datetime.now(UTC))

    stored = [first, *to_framework_messages([second, answer, other])]

    assert len(load_history(stored)) == 4


def test_output_tool_calls_carry_the_structured_answer_as_text() -> None:
    response = ModelResponse(parts=[ToolCallPart("final_result", {"category": "billing"}, "o1")])

    (stored,) = to_framework_messages([response], frozenset({"final_result"}))

    assert stored.text == '{"category":"billing"}'
    assert stored.tool_name == "final_result"


def test_user_message_is_a_model_request() -> None:
    message = user_message("hello")

    (request,) = load_history([message])
    assert message.role == "user" and message.text == "hello"
    assert isinstance(request, ModelRequest)
    assert [part.content for part in request.parts if isinstance(part, UserPromptPart)] == ["hello"]


def test_run_state_round_trips_the_messages_as_model_messages_json() -> None:
    state = RunState(conversation(), ("call_a", "call_b"), 2)

    restored = RunState.from_json(state.to_json())

    assert native_json(restored.messages) == native_json(state.messages)
    assert restored.pending_tool_call_ids == ("call_a", "call_b")
    assert restored.retry_rounds == 2
    assert RunState.from_json(None) == RunState()


def test_run_state_refuses_an_unknown_version() -> None:
    with pytest.raises(ValueError, match="version"):
        RunState.from_json('{"version": 99}')


@pytest.mark.parametrize(
    ("metadata", "effect"),
    [
        ({"effect": "read"}, "read"),
        ({"effect": "idempotent_write"}, "idempotent_write"),
        ({"effect": "bogus"}, None),
        ({"annotations": {"readOnlyHint": True}}, "read"),
        ({"annotations": {"idempotentHint": True, "destructiveHint": True}}, "idempotent_write"),
        ({"annotations": {"destructiveHint": True}}, None),
        (None, None),
    ],
)
def test_effects_from_tool_metadata(metadata: dict[str, object] | None, effect: str | None) -> None:
    assert framework_effect(ToolDefinition(name="t", metadata=metadata)) == effect


def test_history_from_shared_parsed_items_never_shares_what_a_run_may_change() -> None:
    response = ModelResponse(
        parts=[TextPart("done")],
        provider_details={"finish_reason": "stop", "logprobs": [{"token": "done"}]},
        metadata={"pydantic_ai": {"context": {"input_tokens": 3}}},
    )
    (stored,) = to_framework_messages([response])
    parsed = parse_item(stored.framework_item)  # a Worker shares this between Steps

    (first,) = load_history([stored], lambda _: parsed)
    assert isinstance(first, ModelResponse)
    assert first.provider_details is not None and first.metadata is not None
    first.provider_details["logprobs"][0]["token"] = "changed"
    first.metadata["pydantic_ai"]["context"]["input_tokens"] = 99
    first.parts.append(TextPart("more"))

    (second,) = load_history([stored], lambda _: parsed)
    assert isinstance(second, ModelResponse)
    assert second.provider_details == {"finish_reason": "stop", "logprobs": [{"token": "done"}]}
    assert second.metadata == {"pydantic_ai": {"context": {"input_tokens": 3}}}
    assert [part.content for part in second.parts if isinstance(part, TextPart)] == ["done"]
