"""PydanticAiRunner against Pydantic AI's real OpenAIChatModel and a scripted model model."""

from __future__ import annotations

import json
from typing import Any

import pytest
from dex_agents.policy import InvalidToolEffectError
from dex_agents.runner import (
    AgentFrameworkRunner,
    FrameworkItemCache,
    ToolCallsRequested,
    ToolPolicy,
    TurnCompleted,
    TurnContinued,
    UnfinishedTurnMessageBuilder,
)
from dex_agents.testing import (
    Decision,
    RecordingEvents,
    RunnerDriver,
    ScriptedModelServer,
    ScriptedUsage,
    ToolRunLog,
    reply_text,
    reply_tools,
)
from dex_agents.texts import DEFAULT_REJECTION_TEXT, OUTCOME_UNKNOWN_TEXT, TOOL_CALL_HELD_NOT_RUN
from dex_agents.types import AgentToolCall
from pydantic_ai import Agent, DeferredToolRequests, ExternalToolset, ToolDefinition, UserError
from pydantic_ai.messages import (
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
)

from dex_agents_pydantic_ai import DepsContext, PydanticAiRunner
from dex_agents_pydantic_ai.messages import dump_message, extend_history, load_history
from dex_agents_pydantic_ai.model_step import write_delta

from .apps.agents import (
    AppDeps,
    Ticket,
    build_sequential_agent,
    build_ticket_agent,
    build_triage_agent,
    deps_factory,
    scripted_model,
)


def sent_messages(model: ScriptedModelServer, index: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = model.requests[index].body["messages"]
    return messages


def tool_messages(model: ScriptedModelServer, index: int) -> dict[str, str]:
    return {
        message["tool_call_id"]: message["content"]
        for message in sent_messages(model, index)
        if message["role"] == "tool"
    }


def test_runner_implements_the_protocols(triage_runner: PydanticAiRunner[AppDeps]) -> None:
    assert isinstance(triage_runner, AgentFrameworkRunner)
    assert isinstance(triage_runner, UnfinishedTurnMessageBuilder)


async def test_text_answer_is_one_model_call_with_streamed_text_and_usage(
    driver: RunnerDriver, model: ScriptedModelServer
) -> None:
    model.enqueue(reply_text("Hello Ada.", usage=ScriptedUsage(input_tokens=42, output_tokens=7)))

    result = await driver.turn("hi")

    assert len(model.requests) == 1
    completed = result.final
    assert completed.usage is not None
    assert completed.usage.model_dump() == {
        "model_calls": 1,
        "input_tokens": 42,
        "output_tokens": 7,
        "cached_input_tokens": 0,
        "reasoning_tokens": 0,
    }
    assert completed.model_call_metadata is not None
    assert completed.model_call_metadata.request_model == "gpt-test"
    assert completed.model_call_metadata.response_model == "scripted-model"
    assert completed.model_call_metadata.finish_reasons == ("stop",)
    assert [(m.role, m.text) for m in result.new_messages] == [("assistant", "Hello Ada.")]
    assert driver.events.texts() == "Hello Ada."
    assert len([e for e in driver.events.events if e[0] == "text_delta"]) > 1


async def test_cached_and_reasoning_tokens_reach_usage(
    driver: RunnerDriver, model: ScriptedModelServer
) -> None:
    model.enqueue(
        reply_text(
            "ok",
            usage=ScriptedUsage(
                input_tokens=100, output_tokens=30, cached_input_tokens=64, reasoning_tokens=12
            ),
        )
    )

    usage = (await driver.turn("hi")).final.usage

    assert usage is not None
    assert (usage.cached_input_tokens, usage.reasoning_tokens) == (64, 12)


async def test_system_prompts_dynamic_prompt_and_instructions_reach_every_model_call(
    driver: RunnerDriver, model: ScriptedModelServer
) -> None:
    model.enqueue(reply_text("one"), reply_text("two"))

    await driver.turn("first")
    await driver.turn("second")

    for index in (0, 1):
        system = [m["content"] for m in sent_messages(model, index) if m["role"] == "system"]
        assert system == ["You triage support requests.", "The user is Ada.", "Answer briefly."]
    # Stored messages never hold the system prompt: it comes from the code of each call.
    assert all("system-prompt" not in m.framework_item for m in driver.messages)


async def test_read_tool_is_deferred_then_runs_in_its_own_step(
    driver: RunnerDriver, model: ScriptedModelServer, tool_log: ToolRunLog
) -> None:
    model.enqueue(
        reply_tools(("call_1", "get_weather", {"city": "Paris"})), reply_text("It is sunny.")
    )

    result = await driver.turn("weather in Paris?")

    requested, completed = result.outcomes
    assert isinstance(requested, ToolCallsRequested)
    assert [
        (c.tool_call_id, c.tool_name, json.loads(c.arguments)) for c in requested.tool_calls
    ] == [("call_1", "get_weather", {"city": "Paris"})]
    assert requested.tool_calls[0].policy == ToolPolicy(effect="read", requires_approval=False)
    assert requested.new_messages == ()
    assert isinstance(completed, TurnCompleted)
    # The tool ran once, outside the model step, with the real RunContext.
    assert [(e["city"], e["tool_call_id"]) for e in tool_log.entries("get_weather")] == [
        ("Paris", "call_1")
    ]
    assert tool_messages(model, 1) == {"call_1": "Sunny in Paris"}
    assert [
        (m.role, m.tool_call_id, m.tool_name, m.text, m.tool_output) for m in result.new_messages
    ] == [
        ("assistant", "call_1", "get_weather", None, None),
        ("tool", "call_1", "get_weather", None, "Sunny in Paris"),
        ("assistant", None, None, "It is sunny.", None),
    ]
    assert json.loads(result.new_messages[0].tool_arguments or "") == {"city": "Paris"}


async def test_history_replays_on_the_next_turn(
    driver: RunnerDriver, model: ScriptedModelServer
) -> None:
    model.enqueue(
        reply_tools(("call_1", "get_weather", {"city": "Paris"})),
        reply_text("It is sunny."),
        reply_text("You asked about Paris."),
    )

    await driver.turn("weather in Paris?")
    await driver.turn("what did I ask?")

    replayed = [m for m in sent_messages(model, 2) if m["role"] != "system"]
    assert [m["role"] for m in replayed] == ["user", "assistant", "tool", "assistant", "user"]
    assert replayed[1]["tool_calls"][0]["id"] == "call_1"
    assert replayed[2] == {"role": "tool", "tool_call_id": "call_1", "content": "Sunny in Paris"}
    assert replayed[3]["content"] == "It is sunny."
    assert replayed[4]["content"] == "what did I ask?"


async def test_a_sessions_history_is_built_once_and_never_changed_by_a_run(
    triage_runner: PydanticAiRunner[AppDeps], model: ScriptedModelServer
) -> None:
    memo = FrameworkItemCache()
    driver = RunnerDriver(triage_runner, framework_items=memo)
    model.enqueue(
        reply_tools(
            ("call_1", "get_weather", {"city": "Paris"}),
            ("call_2", "get_weather", {"city": "Oslo"}),
            text="Checking.",
        ),
        reply_text("It is sunny."),
        reply_text("You asked about Paris."),
        reply_text("Still Paris."),
    )

    await driver.turn("weather in Paris?")
    first = memo.folded(driver.messages, extend_history)
    await driver.turn("what did I ask?")
    await driver.turn("and before?")

    # Later model calls extended the very same history, message by message...
    later = memo.folded(driver.messages, extend_history)
    assert len(later.messages) > len(first.messages)
    assert all(a is b for a, b in zip(later.messages, first.messages[:-1], strict=False))
    # ...which the runs never changed, though a run fills in fields of the request it sends
    # (system prompts, a dynamic prompt, instructions, deferred and parallel calls here).
    rebuilt = extend_history(None, driver.messages)
    assert [dump_message(m) for m in later.messages] == [dump_message(m) for m in rebuilt.messages]
    assert [dump_message(m) for m in later.messages] == [
        dump_message(m) for m in load_history(driver.messages)
    ]
    # The model saw the same history as without a memo.
    assert sent_messages(model, 3)[:-2] == sent_messages(model, 2)


async def test_parallel_calls_keep_the_model_order_and_replay_as_one_response(
    driver: RunnerDriver, model: ScriptedModelServer, tool_log: ToolRunLog
) -> None:
    model.enqueue(
        reply_tools(
            ("call_a", "get_weather", {"city": "Paris"}),
            ("call_b", "get_weather", {"city": "Oslo"}),
            ("call_c", "lookup_order", {"order_id": "o-1"}),
            text="Checking.",
        ),
        reply_text("Done."),
    )

    result = await driver.turn("weather and order?")

    requested = result.outcomes[0]
    assert isinstance(requested, ToolCallsRequested)
    assert [c.tool_call_id for c in requested.tool_calls] == ["call_a", "call_b", "call_c"]
    assert tool_log.count("get_weather") == 2
    assert tool_log.count("lookup_order") == 1
    # One stored message per call, merged back into one native response on replay.
    assert [m.tool_call_id for m in result.new_messages if m.role == "assistant"] == [
        None,
        "call_a",
        "call_b",
        "call_c",
        None,
    ]
    history = load_history(driver.messages)
    assert [type(m).__name__ for m in history] == [
        "ModelRequest",
        "ModelResponse",
        "ModelRequest",
        "ModelResponse",
    ]
    assistant = [m for m in sent_messages(model, 1) if m["role"] == "assistant"]
    assert len(assistant) == 1
    assert assistant[0]["content"] == "Checking."
    assert [c["id"] for c in assistant[0]["tool_calls"]] == ["call_a", "call_b", "call_c"]
    assert json.loads(tool_messages(model, 1)["call_c"]) == {"order_id": "o-1", "status": "shipped"}


async def test_final_records_reach_the_model_as_the_spec_texts(
    driver: RunnerDriver, model: ScriptedModelServer, tool_log: ToolRunLog
) -> None:
    model.enqueue(
        reply_tools(
            ("call_ok", "get_weather", {"city": "Paris"}),
            ("call_fail", "lookup_order", {"order_id": "x-1"}),
            ("call_reject", "send_email", {"to": "a@b.c", "body": "hi"}),
            ("call_unknown", "charge_card", {"amount": 5}),
        ),
        reply_text("Summary."),
    )

    def decide(record: AgentToolCall) -> Decision:
        if record.tool_name == "send_email":
            return "reject"
        return "outcome_unknown" if record.tool_name == "charge_card" else "run"

    await driver.turn("do it all", decide=decide)

    assert tool_messages(model, 1) == {
        "call_ok": "Sunny in Paris",
        "call_fail": "The tool call failed: order ids start with 'o-'",
        "call_reject": DEFAULT_REJECTION_TEXT,
        "call_unknown": OUTCOME_UNKNOWN_TEXT,
    }
    assert tool_log.count("send_email") == 0
    assert tool_log.count("charge_card:start") == 0
    stored = {m.tool_call_id: m.tool_output for m in driver.messages if m.role == "tool"}
    assert stored["call_reject"] == DEFAULT_REJECTION_TEXT
    assert '"outcome":"denied"' in next(
        m.framework_item
        for m in driver.messages
        if m.role == "tool" and m.tool_call_id == "call_reject"
    )


async def test_policies_come_from_metadata_approval_flags_and_overrides(
    driver: RunnerDriver, model: ScriptedModelServer
) -> None:
    driver.tool_policies["update_ticket"] = ToolPolicy(requires_approval=True)
    model.enqueue(
        reply_tools(
            ("c1", "send_email", {"to": "a@b.c", "body": "hi"}),
            ("c2", "update_ticket", {"ticket_id": "t-1", "status": "closed"}),
            ("c3", "charge_card", {"amount": 5}),
            ("c4", "refund", {"order_id": "o-1", "amount": 5}),
        ),
    )

    driver.append("turn-1", driver.runner.build_user_message("go"))
    outcome = await driver.runner.run_model_step(driver.context("turn-1", None, []))

    assert isinstance(outcome, ToolCallsRequested)
    assert {c.tool_name: c.policy for c in outcome.tool_calls} == {
        "send_email": ToolPolicy(effect="non_idempotent_write", requires_approval=True),
        "update_ticket": ToolPolicy(effect="idempotent_write", requires_approval=True),
        "charge_card": ToolPolicy(effect="unclassified", requires_approval=True),
        "refund": ToolPolicy(effect="unclassified", requires_approval=True),
    }


async def test_approved_write_runs_with_tool_call_approved_and_the_idempotency_key(
    driver: RunnerDriver, model: ScriptedModelServer, tool_log: ToolRunLog
) -> None:
    model.enqueue(
        reply_tools(("c1", "send_email", {"to": "a@b.c", "body": "hi"})), reply_text("Sent.")
    )

    await driver.turn("email a@b.c")

    assert [(e["to"], e["approved"], e["key"]) for e in tool_log.entries("send_email")] == [
        ("a@b.c", True, "session-1/turn-1/c1")
    ]


async def test_a_policy_can_waive_a_declared_approval(
    driver: RunnerDriver, model: ScriptedModelServer, tool_log: ToolRunLog
) -> None:
    driver.tool_policies["send_email"] = ToolPolicy(requires_approval=False)
    model.enqueue(
        reply_tools(("c1", "send_email", {"to": "a@b.c", "body": "hi"})), reply_text("Sent.")
    )

    result = await driver.turn("email a@b.c")

    assert result.records[0].requires_approval is False
    assert result.records[0].status == "succeeded"
    assert tool_log.count("send_email") == 1


async def test_approval_asked_at_run_time_fails_unless_the_policy_requires_it(
    driver: RunnerDriver, model: ScriptedModelServer, tool_log: ToolRunLog
) -> None:
    driver.tool_policies["refund"] = ToolPolicy(
        effect="non_idempotent_write", requires_approval=False
    )
    model.enqueue(
        reply_tools(
            ("small", "refund", {"order_id": "o-1", "amount": 5}),
            ("large", "refund", {"order_id": "o-2", "amount": 500}),
        ),
        reply_text("Done."),
    )

    result = await driver.turn("refund both")

    statuses = {r.tool_call_id: (r.status, r.error) for r in result.records}
    assert statuses["small"] == ("succeeded", None)
    assert statuses["large"][0] == "failed"
    assert "requires_approval=True" in (statuses["large"][1] or "")
    assert [e["order_id"] for e in tool_log.entries()] == ["o-1"]


async def test_sync_tool_sees_the_idempotency_key_and_model_retry_is_a_failure(
    driver: RunnerDriver, model: ScriptedModelServer, tool_log: ToolRunLog
) -> None:
    model.enqueue(
        reply_tools(
            ("c1", "lookup_order", {"order_id": "o-7"}), ("c2", "lookup_order", {"order_id": "7"})
        ),
        reply_text("ok"),
    )

    result = await driver.turn("orders")

    assert [(r.status, r.error) for r in result.records] == [
        ("succeeded", None),
        ("failed", "order ids start with 'o-'"),
    ]
    assert json.loads(result.records[0].output or "") == {"order_id": "o-7", "status": "shipped"}
    assert [e["key"] for e in tool_log.entries()] == ["session-1/turn-1/c1", "session-1/turn-1/c2"]


async def test_invalid_arguments_continue_the_turn_with_one_model_call_per_step(
    driver: RunnerDriver, model: ScriptedModelServer, tool_log: ToolRunLog
) -> None:
    model.enqueue(
        reply_tools(("bad", "get_weather", {"town": "Paris"})),
        reply_tools(("good", "get_weather", {"city": "Paris"})),
        reply_text("Sunny."),
    )

    result = await driver.turn("weather?")

    assert [type(o).__name__ for o in result.outcomes] == [
        "TurnContinued",
        "ToolCallsRequested",
        "TurnCompleted",
    ]
    assert len(model.requests) == 3
    retry = tool_messages(model, 1)["bad"]
    assert "Field required" in retry and "city" in retry
    assert tool_log.count("get_weather") == 1
    assert [(m.role, m.tool_call_id) for m in result.new_messages] == [
        ("assistant", "bad"),
        ("tool", "bad"),
        ("assistant", "good"),
        ("tool", "good"),
        ("assistant", None),
    ]


async def test_retry_rounds_are_bounded(model: ScriptedModelServer, tool_log: ToolRunLog) -> None:
    runner = PydanticAiRunner(
        build_ticket_agent(scripted_model(model.base_url)),
        deps_factory=deps_factory(tool_log.path),
        max_retry_rounds=1,
    )
    driver = RunnerDriver(runner)
    model.enqueue(
        reply_tools(("o1", "final_result", {"category": "billing"})),
        reply_tools(("o2", "final_result", {"category": "billing"})),
    )

    result = await driver.turn("file it")

    assert isinstance(result.outcomes[0], TurnContinued)
    assert result.final.turn_error is not None and "2 retry requests" in result.final.turn_error
    # Every call keeps its result in the stored transcript.
    assert [(m.role, m.tool_call_id) for m in result.new_messages] == [
        ("assistant", "o1"),
        ("tool", "o1"),
        ("assistant", "o2"),
        ("tool", "o2"),
    ]


async def test_structured_output_and_a_tool(
    model: ScriptedModelServer, tool_log: ToolRunLog
) -> None:
    runner = PydanticAiRunner(
        build_ticket_agent(scripted_model(model.base_url)), deps_factory=deps_factory(tool_log.path)
    )
    driver = RunnerDriver(runner, default_tool_effect="read")
    model.enqueue(
        reply_tools(("k1", "known_categories", {})),
        reply_tools(("o1", "final_result", {"category": "billing", "priority": 2})),
    )

    result = await driver.turn("my invoice is wrong")

    assert tool_messages(model, 1) == {"k1": '["billing","shipping"]'}
    answer = [m for m in result.new_messages if m.role == "assistant"][-1]
    assert answer.tool_name == "final_result"
    assert Ticket.model_validate_json(answer.text or "") == Ticket(category="billing", priority=2)
    assert {t["function"]["name"] for t in model.requests[0].body["tools"]} == {
        "known_categories",
        "final_result",
    }


async def test_unfinished_turn_messages_keep_the_transcript_with_a_result_per_call(
    driver: RunnerDriver, model: ScriptedModelServer
) -> None:
    model.enqueue(
        reply_tools(
            ("c1", "get_weather", {"city": "Paris"}), ("c2", "send_email", {"to": "x", "body": "y"})
        )
    )
    driver.append("turn-1", driver.runner.build_user_message("go"))
    requested = await driver.runner.run_model_step(driver.context("turn-1", None, []))
    assert isinstance(requested, ToolCallsRequested)
    records = [driver.approved_record("turn-1", call) for call in requested.tool_calls]
    records = [
        await driver.execute(records[0]),
        records[1].model_copy(update={"status": "rejected", "rejection_message": "no"}),
    ]

    unfinished = await driver.runner.build_unfinished_turn_messages(
        driver.context("turn-1", requested.framework_run_state, records)
    )

    assert [(m.role, m.tool_call_id, m.tool_output) for m in unfinished] == [
        ("assistant", "c1", None),
        ("assistant", "c2", None),
        ("tool", "c1", "Sunny in Paris"),
        ("tool", "c2", "no"),
    ]
    for message in unfinished:
        driver.append("turn-1", message)
    driver.append("turn-2", driver.runner.build_user_message("next"))
    model.enqueue(reply_text("ok"))
    await driver.runner.run_model_step(driver.context("turn-2", None, []))
    roles = [m["role"] for m in sent_messages(model, 1) if m["role"] != "system"]
    assert roles == ["user", "assistant", "tool", "tool", "user"]


async def test_calls_held_behind_a_sequential_tool_read_as_not_run_when_the_turn_ends(
    model: ScriptedModelServer, tool_log: ToolRunLog
) -> None:
    agent = build_sequential_agent(scripted_model(model.base_url))
    driver = RunnerDriver(PydanticAiRunner(agent, deps_factory=deps_factory(tool_log.path)))
    model.enqueue(reply_tools(("f1", "fetch", {"label": "a"}), ("m1", "migrate", {"label": "m"})))
    driver.append("turn-1", driver.runner.build_user_message("go"))
    requested = await driver.runner.run_model_step(driver.context("turn-1", None, []))
    # Only the call before the barrier is handed over; the migration waits in the run state.
    assert isinstance(requested, ToolCallsRequested)
    assert [call.tool_call_id for call in requested.tool_calls] == ["f1"]
    (record,) = [driver.approved_record("turn-1", call) for call in requested.tool_calls]
    records = [await driver.execute(record)]

    # The turn ends (steered, cancelled, failed) before the migration's turn came.
    unfinished = await driver.runner.build_unfinished_turn_messages(
        driver.context("turn-1", requested.framework_run_state, records)
    )

    assert [(m.role, m.tool_call_id, m.tool_output) for m in unfinished] == [
        ("assistant", "f1", None),
        ("assistant", "m1", None),
        ("tool", "f1", "a done"),
        ("tool", "m1", TOOL_CALL_HELD_NOT_RUN),
    ]
    assert [e["label"] for e in tool_log.entries("migrate")] == []


def test_output_validators_need_deferred_tool_requests_in_the_output_type(
    model: ScriptedModelServer,
) -> None:
    agent = Agent(scripted_model(model.base_url), output_type=Ticket)

    @agent.output_validator
    def check(ticket: Ticket) -> Ticket:
        return ticket

    with pytest.raises(UserError, match="DeferredToolRequests"):
        PydanticAiRunner(agent)
    listed = Agent(scripted_model(model.base_url), output_type=[Ticket, DeferredToolRequests])
    listed.output_validator(check)
    PydanticAiRunner(listed)


async def test_tool_failed_is_a_failure_and_other_errors_fail_the_attempt(
    driver: RunnerDriver, model: ScriptedModelServer
) -> None:
    model.enqueue(reply_tools(("c1", "check_stock", {"item": "lamp"})))
    driver.append("turn-1", driver.runner.build_user_message("stock?"))
    requested = await driver.runner.run_model_step(driver.context("turn-1", None, []))
    assert isinstance(requested, ToolCallsRequested)
    record = driver.approved_record("turn-1", requested.tool_calls[0])

    failed = await driver.execute(record)
    assert (failed.status, failed.error) == ("failed", "lamp is out of stock")
    on_fire = record.model_copy(update={"arguments": '{"item": "fire"}'})
    with pytest.raises(RuntimeError, match="on fire"):
        await driver.execute(on_fire)


async def test_deps_factory_sees_each_step_and_may_be_async(
    model: ScriptedModelServer, tool_log: ToolRunLog
) -> None:
    seen: list[DepsContext] = []
    build = deps_factory(tool_log.path)

    async def factory(context: DepsContext) -> AppDeps:
        seen.append(context)
        return build(context)

    runner = PydanticAiRunner(
        build_triage_agent(scripted_model(model.base_url)), deps_factory=factory
    )
    driver = RunnerDriver(runner, flow_id="session-9")
    model.enqueue(reply_tools(("c1", "get_weather", {"city": "Rome"})), reply_text("Warm."))

    await driver.turn("Rome?")

    assert [(c.flow_id, c.turn_id, c.tool_call and c.tool_call.tool_call_id) for c in seen] == [
        ("session-9", "turn-1", None),
        ("session-9", "turn-1", "c1"),
        ("session-9", "turn-1", None),
    ]
    assert tool_log.entries("get_weather")[0]["flow_id"] == "session-9"
    # The session is the conversation of every Pydantic AI run it makes.
    assert all('"conversation_id":"session-9"' in m.framework_item for m in driver.messages[1:])


async def test_model_settings_reach_the_request_and_streaming_can_be_off(
    model: ScriptedModelServer,
) -> None:
    agent = Agent(
        scripted_model(model.base_url),
        model_settings={"temperature": 0.25, "max_tokens": 64},
    )
    driver = RunnerDriver(PydanticAiRunner(agent, stream=False))
    model.enqueue(reply_text("Calm."))

    result = await driver.turn("hi")

    body = model.requests[0].body
    assert (body["temperature"], body["max_completion_tokens"], body["stream"]) == (0.25, 64, False)
    assert driver.events.events == []
    assert result.final.new_messages[0].text == "Calm."


def test_thinking_streams_as_reasoning_deltas() -> None:
    events = RecordingEvents()
    for event in (
        PartStartEvent(index=0, part=ThinkingPart("Let me ")),
        PartDeltaEvent(index=0, delta=ThinkingPartDelta(content_delta="think.")),
        PartStartEvent(index=1, part=TextPart("")),
        PartDeltaEvent(index=1, delta=TextPartDelta(content_delta="Done.")),
    ):
        write_delta(event, events)

    assert events.events == [
        ("reasoning_delta", {"text": "Let me "}),
        ("reasoning_delta", {"text": "think."}),
        ("text_delta", {"text": "Done."}),
    ]


async def test_an_effect_that_is_not_one_fails_the_model_step_before_the_model_is_called(
    model: ScriptedModelServer,
) -> None:
    outside = ExternalToolset([ToolDefinition(name="ask_manager", metadata={"effect": "reed"})])
    driver = RunnerDriver(
        PydanticAiRunner(Agent(scripted_model(model.base_url), toolsets=[outside]))
    )
    model.enqueue(reply_text("Never sent."))
    with pytest.raises(InvalidToolEffectError, match="tool 'ask_manager' declares effect 'reed'"):
        await driver.model_step(driver.start_turn("ask"), None)
    assert model.requests == []


@pytest.mark.parametrize("approval", [True, False])
async def test_external_tools_fail_in_a_tool_step_without_running(
    model: ScriptedModelServer, approval: bool
) -> None:
    outside = ExternalToolset([ToolDefinition(name="ask_manager", metadata={"effect": "read"})])
    agent = Agent(scripted_model(model.base_url), toolsets=[outside])
    driver = RunnerDriver(PydanticAiRunner(agent))
    driver.tool_policies["ask_manager"] = ToolPolicy(requires_approval=approval)
    model.enqueue(reply_tools(("m1", "ask_manager", {})), reply_text("No answer."))

    result = await driver.turn("ask")

    assert result.records[0].status == "failed"
    assert "cannot wait for" in (result.records[0].error or "")
