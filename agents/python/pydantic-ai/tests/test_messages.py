"""Stored messages, run state and tool effects, without a model."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import pytest
from dex_agents.policy import InvalidToolEffectError
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
    dump_message,
    extend_history,
    load_history,
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


def native_json(messages: Sequence[ModelMessage]) -> bytes:
    return ModelMessagesTypeAdapter.dump_json(list(messages))


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
        ({"annotations": {"readOnlyHint": True}}, "read"),
        ({"annotations": {"idempotentHint": True, "destructiveHint": True}}, "idempotent_write"),
        ({"annotations": {"destructiveHint": True}}, None),
        (None, None),
    ],
)
def test_effects_from_tool_metadata(metadata: dict[str, object] | None, effect: str | None) -> None:
    assert framework_effect(ToolDefinition(name="t", metadata=metadata)) == effect


def test_an_effect_that_is_not_one_is_refused_even_beside_a_hint() -> None:
    tool = ToolDefinition(
        name="lookup", metadata={"effect": "bogus", "annotations": {"readOnlyHint": True}}
    )
    with pytest.raises(InvalidToolEffectError, match="tool 'lookup' declares effect 'bogus'"):
        framework_effect(tool)


def test_a_run_gets_its_own_copy_of_the_last_request_and_what_follows_it() -> None:
    response = ModelResponse(
        parts=[TextPart("done")],
        provider_details={"finish_reason": "stop", "logprobs": [{"token": "done"}]},
        metadata={"pydantic_ai": {"context": {"input_tokens": 3}}},
    )
    stored = [
        user_message("one"),
        *to_framework_messages([ModelResponse(parts=[TextPart("a")], timestamp=NOW)]),
        user_message("two"),
        *to_framework_messages([response]),
    ]
    history = extend_history(None, stored)  # a Worker shares this between Steps

    run = history.for_run()
    # What comes before the last request is shared; the request and the response after it
    # are the run's own.
    assert run[0] is history.messages[0] and run[1] is history.messages[1]
    request, answer = run[2], run[3]
    assert request is not history.messages[2] and answer is not history.messages[3]
    assert isinstance(request, ModelRequest) and isinstance(answer, ModelResponse)
    assert answer.provider_details is not None and answer.metadata is not None
    answer.provider_details["logprobs"][0]["token"] = "changed"
    answer.metadata["pydantic_ai"]["context"]["input_tokens"] = 99
    assert isinstance(answer.parts, list) and isinstance(request.parts, list)
    answer.parts.append(TextPart("more"))
    request.parts.append(UserPromptPart("more"))
    request.instructions = "changed"

    assert [dump_message(m) for m in history.for_run()] == [m.framework_item for m in stored]


def test_a_history_extended_by_later_messages_is_left_as_it_was() -> None:
    pieces = to_framework_messages(conversation())
    earlier = extend_history(None, pieces[:3])
    before = [dump_message(m) for m in earlier.messages]

    later = extend_history(earlier, pieces[3:])

    assert [dump_message(m) for m in earlier.messages] == before
    # A piece stored after the split still merges into the native message it belongs to.
    assert native_json(later.messages) == native_json(conversation())
    assert native_json(later.messages) == native_json(extend_history(None, pieces).messages)
