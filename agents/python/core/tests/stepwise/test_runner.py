"""StepwiseRunner against a scripted model server that LiteLLM really calls over HTTP."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace as Chunk
from typing import Any

import pytest

from dex_agents.model_errors import model_call_retry_advice
from dex_agents.runner import (
    DeferredToolCall,
    ModelCallMetadata,
    ToolCallsRequested,
    ToolInputRequested,
    ToolPolicy,
    TurnCompleted,
    TurnContinued,
)
from dex_agents.stepkit import RetryAdvice
from dex_agents.stepwise import (
    BUILT_IN_TOOL_DEFINITIONS,
    CONTINUATION_LIMIT_ERROR,
    AgentDefinition,
    InstructionContext,
    ModelClient,
    StepwiseRunner,
    Tool,
    TurnContinuation,
    TurnContinuationContext,
    current_tool_execution,
    tool,
)
from dex_agents.stepwise.model import ModelRequest, _ReplyBuilder
from dex_agents.testing import (
    ScriptedModelServer,
    ScriptedReply,
    ScriptedUsage,
    reply_text,
    reply_tools,
)
from dex_agents.types import AgentPlan, AgentPlanTask, AgentUsage, ContextSummary, QuestionAnswer

from .conftest import LITELLM_NOISE, Session, item, request_messages

pytestmark = LITELLM_NOISE


@tool(effect="read")
def get_weather(city: str, unit: str = "C") -> str:
    """The current weather in a city.

    Args:
        city: The city's name.
        unit: C or F.
    """
    return f"18{unit} in {city}"


@tool(effect="non_idempotent_write")
async def send_email(to: str, body: str) -> dict[str, str]:
    """Send an email."""
    return {"sent_to": to}


def runner_for(client: ModelClient, **overrides: Any) -> StepwiseRunner:
    fields: dict[str, Any] = {
        "name": "Assistant",
        "instructions": "You are terse.",
        "tools": [get_weather, send_email],
        "model": client,
    }
    fields.update(overrides)
    return StepwiseRunner(AgentDefinition(**fields))


def start(runner: StepwiseRunner, text: str, **fields: Any) -> Session:
    session = Session(**fields)
    session.store([runner.build_user_message(text)])
    return session


async def test_streams_text_and_reasoning_and_reports_usage(
    server: ScriptedModelServer, model_client: ModelClient
) -> None:
    server.enqueue(
        reply_text(
            "Hello there, friend",
            reasoning="The user greets me.",
            usage=ScriptedUsage(
                input_tokens=120, output_tokens=20, cached_input_tokens=100, reasoning_tokens=7
            ),
        )
    )
    runner = runner_for(model_client, tools=[])
    session = start(runner, "Hi")
    outcome = await runner.run_model_step(session.turn())

    assert isinstance(outcome, TurnCompleted)
    assert outcome.turn_error is None
    assert [item(m) for m in outcome.new_messages] == [
        {"role": "assistant", "content": "Hello there, friend"}
    ]
    assert outcome.new_messages[0].text == "Hello there, friend"
    text = session.events.texts("text_delta")
    assert len(text) > 1 and "".join(text) == "Hello there, friend"
    assert "".join(session.events.texts("reasoning_delta")) == "The user greets me."
    assert outcome.usage == AgentUsage(
        model_calls=1,
        input_tokens=120,
        output_tokens=20,
        cached_input_tokens=100,
        reasoning_tokens=7,
    )
    assert outcome.model_call_metadata == ModelCallMetadata(
        request_model="scripted-model",
        response_model="scripted-model",
        provider_name="openai",
        response_id="chatcmpl-scripted-1",
        finish_reasons=("stop",),
    )
    body = server.requests[0].body
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert "tools" not in body
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Hi"},
    ]


def test_build_user_message() -> None:
    runner = StepwiseRunner(AgentDefinition("a", "i", model="openai/x"))
    message = runner.build_user_message("Grüße")
    assert (message.role, message.text) == ("user", "Grüße")
    assert json.loads(message.framework_item) == {"role": "user", "content": "Grüße"}


async def test_tool_calls_run_in_tool_steps_and_the_turn_replays(
    server: ScriptedModelServer, model_client: ModelClient
) -> None:
    server.enqueue(
        reply_tools(
            ("call_1", "get_weather", {"city": "Paris"}),
            ("call_2", "send_email", {"to": "a@b.c", "body": "Rain"}),
            text="Checking.",
        ),
        reply_text("It is 18C in Paris; mail sent."),
        reply_text("You're welcome."),
    )
    runner = runner_for(model_client)
    session = start(runner, "Weather in Paris, then mail a@b.c")

    first = await runner.run_model_step(session.turn())
    assert isinstance(first, ToolCallsRequested)
    assert first.new_messages == ()
    assert [(c.tool_call_id, c.tool_name, json.loads(c.arguments)) for c in first.tool_calls] == [
        ("call_1", "get_weather", {"city": "Paris"}),
        ("call_2", "send_email", {"to": "a@b.c", "body": "Rain"}),
    ]
    assert [c.policy for c in first.tool_calls] == [
        ToolPolicy(effect="read", requires_approval=False),
        ToolPolicy(effect="non_idempotent_write", requires_approval=True),
    ]
    assert first.usage is not None and first.usage.model_calls == 1
    tools = {t["function"]["name"]: t["function"] for t in server.requests[0].body["tools"]}
    assert tools["get_weather"]["description"] == "The current weather in a city."
    assert tools["get_weather"]["parameters"]["properties"]["city"] == {
        "type": "string",
        "description": "The city's name.",
    }
    assert tools["get_weather"]["parameters"]["required"] == ["city"]

    session.request_tools(first)
    await session.run_tools(runner)
    second = await runner.run_model_step(session.turn())
    assert isinstance(second, TurnCompleted)
    messages = request_messages(server, 1)
    assert messages[-3:] == [
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {
                        "name": "send_email",
                        "arguments": '{"to": "a@b.c", "body": "Rain"}',
                    },
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "18C in Paris"},
        {"role": "tool", "tool_call_id": "call_2", "content": '{"sent_to":"a@b.c"}'},
    ]
    stored = second.new_messages
    assert [(m.role, m.tool_call_id, m.tool_name) for m in stored] == [
        ("assistant", None, None),
        ("tool", "call_1", "get_weather"),
        ("tool", "call_2", "send_email"),
        ("assistant", None, None),
    ]
    assert stored[1].tool_output == "18C in Paris"

    # The next turn replays the whole conversation from the stored framework items.
    session.store(stored)
    session.turn_id, session.run_state, session.records = "turn-2", None, []
    session.store([runner.build_user_message("Thanks")])
    third = await runner.run_model_step(session.turn())
    assert isinstance(third, TurnCompleted)
    replay = request_messages(server, 2)
    assert [m["role"] for m in replay] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "user",
    ]
    final_answer = {"role": "assistant", "content": "It is 18C in Paris; mail sent."}
    assert replay[1:6] == [*messages[1:], final_answer]


async def test_a_single_tool_call_is_projected_on_the_stored_message(
    server: ScriptedModelServer, model_client: ModelClient
) -> None:
    server.enqueue(reply_tools(("call_1", "get_weather", {"city": "Oslo"})), reply_text("Cold."))
    runner = runner_for(model_client)
    session = start(runner, "Oslo?")
    session.request_tools(await runner.run_model_step(session.turn()))  # type: ignore[arg-type]
    await session.run_tools(runner)
    done = await runner.run_model_step(session.turn())
    assert isinstance(done, TurnCompleted)
    call = done.new_messages[0]
    assert (call.tool_call_id, call.tool_name, call.tool_arguments, call.text) == (
        "call_1",
        "get_weather",
        '{"city": "Oslo"}',
        None,
    )


async def test_invalid_arguments_and_final_statuses_reach_the_model(
    server: ScriptedModelServer, model_client: ModelClient
) -> None:
    server.enqueue(
        reply_tools(
            ("call_1", "get_weather", {"town": "Paris"}),
            ("call_2", "send_email", {"to": "x", "body": "y"}),
            ("call_3", "get_weather", '{"city": '),
        ),
        reply_text("Sorry."),
    )
    runner = runner_for(model_client)
    session = start(runner, "Go")
    session.request_tools(await runner.run_model_step(session.turn()))  # type: ignore[arg-type]
    session.finish("call_2", status="rejected", rejection_message=None)
    await session.run_tools(runner)
    await runner.run_model_step(session.turn())
    results = {
        m["tool_call_id"]: m["content"] for m in request_messages(server) if m["role"] == "tool"
    }
    assert results == {
        "call_1": "The tool call failed: invalid arguments for tool get_weather: "
        "city: Field required; town: Extra inputs are not permitted",
        "call_2": "The user rejected this tool call.",
        "call_3": "The tool call failed: invalid arguments for tool get_weather: "
        "arguments must be a JSON object",
    }


async def test_a_tool_asks_the_user_before_it_takes_effect(
    server: ScriptedModelServer, model_client: ModelClient
) -> None:
    deleted: list[str] = []

    @tool(effect="non_idempotent_write", requires_approval=False)
    def delete_file(path: str) -> ToolInputRequested | str:
        """Delete a file."""
        answers = current_tool_execution().input_answers
        if not answers:
            return ToolInputRequested(f"Delete {path}?", ("yes", "no"), allows_free_text=False)
        deleted.append(path)
        return f"deleted {path}"

    server.enqueue(reply_tools(("call_1", "delete_file", {"path": "a.txt"})), reply_text("Done."))
    runner = runner_for(model_client, tools=[delete_file])
    session = start(runner, "Delete a.txt")
    requested = await runner.run_model_step(session.turn())
    assert isinstance(requested, ToolCallsRequested)
    assert requested.tool_calls[0].policy == ToolPolicy("non_idempotent_write", False)
    session.request_tools(requested)
    record = session.records[0]
    asked = await runner.execute_deferred_tool_call(session.execution(record))
    assert asked == ToolInputRequested("Delete a.txt?", ("yes", "no"), False)
    assert deleted == []

    answer = QuestionAnswer(interrupt_id="call_1-input-1", question="Delete a.txt?", answer="yes")
    execution = session.execution(record)
    execution = type(execution)(**{**execution.__dict__, "input_answers": (answer,)})
    result = await runner.execute_deferred_tool_call(execution)
    assert result.output == "deleted a.txt"  # type: ignore[union-attr]
    assert deleted == ["a.txt"]


async def test_continuation_after_an_answer_and_the_limit(
    server: ScriptedModelServer, model_client: ModelClient
) -> None:
    seen: list[TurnContinuationContext] = []

    def decide(context: TurnContinuationContext) -> TurnContinuation:
        seen.append(context)
        return TurnContinuation("Keep going.")

    runner = runner_for(model_client, decide_turn_continuation=decide)
    session = start(runner, "Work")
    for number in range(1, 9):
        server.enqueue(reply_text(f"Answer {number}"))
        outcome = await runner.run_model_step(session.turn())
        assert isinstance(outcome, TurnContinued), number
        assert [item(m) for m in outcome.new_messages] == [
            {"role": "assistant", "content": f"Answer {number}"},
            {"role": "user", "content": "Keep going."},
        ]
        assert json.loads(outcome.framework_run_state) == {
            "items": [],
            "consecutive_continuations": number,
        }
        assert outcome.usage is not None and outcome.usage.model_calls == 1
        session.store(outcome.new_messages)
        session.run_state = outcome.framework_run_state
        # The next request ends with the continuation, as user text.
    assert seen[-1].after == "answer" and seen[-1].answer == "Answer 8"
    assert [c.consecutive_continuations for c in seen] == list(range(8))

    server.enqueue(reply_text("Answer 9"))
    last = await runner.run_model_step(session.turn())
    assert isinstance(last, TurnCompleted)
    assert last.turn_error == CONTINUATION_LIMIT_ERROR
    assert [item(m) for m in last.new_messages] == [{"role": "assistant", "content": "Answer 9"}]
    assert request_messages(server)[-1] == {"role": "user", "content": "Keep going."}


async def test_continuation_after_tool_calls_follows_the_results(
    server: ScriptedModelServer, model_client: ModelClient
) -> None:
    decisions: list[Any] = [TurnContinuation("Now summarize."), None]

    def decide(context: TurnContinuationContext) -> Any:
        return decisions.pop(0) if context.after == "tool_calls" else None

    server.enqueue(
        reply_tools(("call_1", "get_weather", {"city": "Rome"})),
        reply_tools(("call_2", "get_weather", {"city": "Bern"})),
        reply_text("Rome and Bern are mild."),
    )
    runner = runner_for(model_client, decide_turn_continuation=decide)
    session = start(runner, "Rome?")
    session.request_tools(await runner.run_model_step(session.turn()))  # type: ignore[arg-type]
    await session.run_tools(runner)
    second = await runner.run_model_step(session.turn())
    assert isinstance(second, ToolCallsRequested)
    assert [m["role"] for m in request_messages(server, 1)][-3:] == ["assistant", "tool", "user"]
    assert request_messages(server, 1)[-1] == {"role": "user", "content": "Now summarize."}
    assert json.loads(second.framework_run_state)["consecutive_continuations"] == 1

    # A decision to go on as usual ends the run of continuations.
    session.request_tools(second)
    await session.run_tools(runner)
    done = await runner.run_model_step(session.turn())
    assert isinstance(done, TurnCompleted)
    assert [m.role for m in done.new_messages] == [
        "assistant",
        "tool",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]


async def test_end_after_tool_calls_completes_with_the_results_only(
    server: ScriptedModelServer, model_client: ModelClient
) -> None:
    async def decide(context: TurnContinuationContext) -> Any:
        assert [r.tool_call_id for r in context.tool_calls] == ["call_1"]
        return "end" if context.after == "tool_calls" else None

    server.enqueue(reply_tools(("call_1", "get_weather", {"city": "Rome"})))
    runner = runner_for(model_client, decide_turn_continuation=decide)
    session = start(runner, "Rome?")
    session.request_tools(await runner.run_model_step(session.turn()))  # type: ignore[arg-type]
    await session.run_tools(runner)
    done = await runner.run_model_step(session.turn())
    assert isinstance(done, TurnCompleted)
    assert done.usage == AgentUsage()
    assert done.turn_error is None
    assert [(m.role, m.tool_output) for m in done.new_messages] == [
        ("assistant", None),
        ("tool", "18C in Rome"),
    ]
    assert len(server.requests) == 1


async def test_continuations_after_tool_calls_count_toward_the_limit(
    server: ScriptedModelServer, model_client: ModelClient
) -> None:
    runner = runner_for(model_client, decide_turn_continuation=lambda c: TurnContinuation("More."))
    session = start(runner, "Go")
    session.run_state = json.dumps(
        {
            "items": [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city":"A"}'},
                        }
                    ],
                }
            ],
            "consecutive_continuations": 8,
        }
    )
    session.request_tools(ToolCallsRequested(session.run_state, [_call("call_1")]))
    session.finish("call_1", status="succeeded", output="sunny")
    done = await runner.run_model_step(session.turn())
    assert isinstance(done, TurnCompleted)
    assert done.turn_error == CONTINUATION_LIMIT_ERROR
    assert [m.role for m in done.new_messages] == ["assistant", "tool"]
    assert server.requests == []


def _call(tool_call_id: str) -> DeferredToolCall:
    return DeferredToolCall(tool_call_id, "get_weather", '{"city":"A"}', ToolPolicy("read", False))


@pytest.mark.parametrize(
    "reply",
    [
        reply_text("never finished", hang=True),  # cancelled while streaming
        reply_text("too late", delay_seconds=30),  # cancelled before the response starts
    ],
    ids=["streaming", "waiting"],
)
async def test_cancellation_stops_the_call_and_closes_the_stream(
    server: ScriptedModelServer, model_client: ModelClient, reply: Any
) -> None:
    server.enqueue(reply)
    runner = runner_for(model_client)
    session = start(runner, "Hi")
    task = asyncio.create_task(runner.run_model_step(session.turn()))
    await asyncio.to_thread(server.wait_for_requests, 1)
    await asyncio.sleep(0.3)
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.to_thread(server.wait_for_dropped, 1)
    assert server.dropped == 1


async def test_built_ins_are_offered_and_reserve_their_names(
    server: ScriptedModelServer, model_client: ModelClient
) -> None:
    @tool(name="ask_user", effect="read")
    def my_ask(question: str) -> str:
        """The application's own ask_user, hidden while the built-in is enabled."""
        return question

    server.enqueue(
        reply_tools(
            ("call_1", "ask_user", {"question": "Which city?"}),
            ("call_2", "invented_tool", {}),
        )
    )
    runner = runner_for(model_client, tools=[get_weather, my_ask])
    session = start(runner, "Weather?", enabled_built_in_tools=("ask_user", "durable_wait"))
    outcome = await runner.run_model_step(session.turn())
    assert isinstance(outcome, ToolCallsRequested)
    offered = server.requests[0].body["tools"]
    assert offered == [
        get_weather.definition(),
        BUILT_IN_TOOL_DEFINITIONS["ask_user"],
        BUILT_IN_TOOL_DEFINITIONS["durable_wait"],
    ]
    assert [c.policy for c in outcome.tool_calls] == [
        ToolPolicy("read", False),
        ToolPolicy("read", False),
    ]


async def test_tool_call_ids_are_unique_in_the_turn(
    server: ScriptedModelServer, model_client: ModelClient
) -> None:
    server.enqueue(
        reply_tools(("call_0", "get_weather", {"city": "A"})),
        reply_tools(
            ("call_0", "get_weather", {"city": "B"}),
            ("x/y", "get_weather", {"city": "C"}),
            ("..", "get_weather", {"city": "D"}),
        ),
    )
    runner = runner_for(model_client)
    session = start(runner, "Go")
    session.request_tools(await runner.run_model_step(session.turn()))  # type: ignore[arg-type]
    await session.run_tools(runner)
    second = await runner.run_model_step(session.turn())
    assert isinstance(second, ToolCallsRequested)
    ids = [c.tool_call_id for c in second.tool_calls]
    assert "call_0" not in ids and all(i and "/" not in i for i in ids) and len(set(ids)) == 3
    assert not {".", ".."} & set(ids)  # every ID is one URL path segment
    stored = json.loads(second.framework_run_state)["items"][-1]
    assert [c["id"] for c in stored["tool_calls"]] == ids


async def test_unfinished_turn_messages_keep_the_exact_transcript(
    server: ScriptedModelServer, model_client: ModelClient
) -> None:
    server.enqueue(
        reply_tools(
            ("call_1", "get_weather", {"city": "A"}),
            ("call_2", "send_email", {"to": "a", "body": "b"}),
        )
    )
    runner = runner_for(model_client)
    session = start(runner, "Go")
    session.request_tools(await runner.run_model_step(session.turn()))  # type: ignore[arg-type]
    session.finish("call_1", status="succeeded", output="sunny")
    session.finish(
        "call_2",
        status="rejected",
        rejection_message='{"status":"cancelled","reason":"superseded_by_steered_user_message"}',
    )
    messages = await runner.build_unfinished_turn_messages(session.turn())
    assert [(m.role, m.tool_call_id, m.tool_output) for m in messages] == [
        ("assistant", None, None),
        ("tool", "call_1", "sunny"),
        (
            "tool",
            "call_2",
            '{"status":"cancelled","reason":"superseded_by_steered_user_message"}',
        ),
    ]
    assert await runner.build_unfinished_turn_messages(start(runner, "x").turn()) == []


async def test_model_settings_instructions_and_resolve_model(server: ScriptedModelServer) -> None:
    contexts: list[InstructionContext] = []

    def instructions(context: InstructionContext) -> str:
        contexts.append(context)
        return f"Speak {context.session_settings.get('language', 'English')}."

    def resolve(settings: Any) -> ModelClient:
        return ModelClient(
            f"openai/{settings.get('model', 'small')}",
            api_base=server.base_url,
            api_key="test",
            settings={"temperature": 0.5},
        )

    server.enqueue(reply_text("Hola"), reply_text("Hello"))
    runner = StepwiseRunner(
        AgentDefinition(
            "Assistant",
            instructions,
            resolve_model=resolve,
            model_settings={"temperature": 0.1, "top_p": 0.9},
            max_output_tokens=256,
        )
    )
    session = start(runner, "Hi", settings={"model": "large", "language": "Spanish"})
    await runner.run_model_step(session.turn())
    body = server.requests[0].body
    assert body["model"] == "large"
    assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.5, 0.9, 256)
    assert body["messages"][0] == {"role": "system", "content": "Speak Spanish."}
    assert contexts == [
        InstructionContext({"model": "large", "language": "Spanish"}, "chat", "turn-1")
    ]

    await runner.run_model_step(start(runner, "Hi").turn())
    assert server.requests[1].body["model"] == "small"


async def test_a_failing_model_call_sends_one_request_per_attempt(
    server: ScriptedModelServer, model_client: ModelClient
) -> None:
    """LiteLLM's OpenAI client would retry a 500 twice by itself; the Step's attempts are the
    retries, so an attempt sends one request, unless the settings ask for LiteLLM's."""
    server.enqueue(*[ScriptedReply(status=500, text="overloaded")] * 3)
    runner = runner_for(model_client, tools=[])
    with pytest.raises(Exception, match="overloaded"):
        await runner.run_model_step(start(runner, "Hi").turn())
    assert len(server.requests) == 1

    server.enqueue(reply_text("Hi."))
    runner = runner_for(model_client, tools=[], model_settings={"max_retries": 2})
    outcome = await runner.run_model_step(start(runner, "Hi").turn())
    assert isinstance(outcome, TurnCompleted) and outcome.new_messages[0].text == "Hi."
    # The two 500s left over, then the answer: one call, three requests.
    assert len(server.requests) == 4


async def test_model_errors_are_judged_by_their_status_and_retry_after(
    server: ScriptedModelServer, model_client: ModelClient
) -> None:
    """RunModel reads LiteLLM's errors as the providers' SDKs would: a 400 is not tried again;
    a 429 is, no sooner than its Retry-After; a 500 is, after the Step's own backoff."""
    runner = runner_for(model_client, tools=[])
    advice = []
    for reply in (
        ScriptedReply(status=400, text="unknown parameter"),
        ScriptedReply(status=429, retry_after=7),
        ScriptedReply(status=500),
    ):
        server.enqueue(reply)
        with pytest.raises(Exception) as raised:
            await runner.run_model_step(start(runner, "Hi").turn())
        advice.append(model_call_retry_advice(raised.value))
    assert advice == [
        RetryAdvice(retry=False, reason="HTTP 400 is not retried"),
        RetryAdvice(retry=True, delay=7.0),
        RetryAdvice(retry=True),
    ]


async def test_the_context_summary_comes_first(
    server: ScriptedModelServer, model_client: ModelClient
) -> None:
    server.enqueue(reply_text("ok"))
    runner = runner_for(model_client, tools=[])
    session = start(runner, "Next question")
    session.summary = ContextSummary(
        generation=1, last_sequence=40, text="The user likes tea.", created_at="x"
    )
    await runner.run_model_step(session.turn())
    assert request_messages(server) == [
        {"role": "system", "content": "You are terse."},
        {
            "role": "user",
            "content": "[Dex] Summary of the earlier conversation:\nThe user likes tea.",
        },
        {"role": "user", "content": "Next question"},
    ]


# -- plan mode ---------------------------------------------------------------------------------

PLANNING_LINE = (
    "This turn only plans: write or revise the plan with write_todos, and do not do or claim "
    "any of its tasks. The user reviews the plan before it runs."
)


def planning_session(runner: StepwiseRunner, **fields: Any) -> Session:
    session = Session(
        enabled_built_in_tools=("ask_user", "write_todos"), interaction_mode="planning", **fields
    )
    session.store([runner.build_user_message("Earlier"), runner.build_user_message("Ok")], "turn-0")
    session.store([runner.build_user_message("Plan the release")])
    return session


async def test_a_planning_turn_offers_only_write_todos_after_the_plan_note(
    server: ScriptedModelServer, model_client: ModelClient
) -> None:
    server.enqueue(reply_text("Which release?"))
    runner = runner_for(model_client)
    assert runner.supports_plan_mode is True
    session = planning_session(runner)
    outcome = await runner.run_model_step(session.turn())
    assert isinstance(outcome, TurnCompleted)
    body = server.requests[0].body
    assert body["tools"] == [BUILT_IN_TOOL_DEFINITIONS["write_todos"]]
    assert "tool_choice" not in body
    assert body["messages"][1:] == [
        {"role": "user", "content": "Earlier"},
        {"role": "user", "content": "Ok"},
        {"role": "user", "content": "[Dex] There is no plan yet.\n" + PLANNING_LINE},
        {"role": "user", "content": "Plan the release"},
    ]


async def test_an_executing_turn_shows_the_active_plan(
    server: ScriptedModelServer, model_client: ModelClient
) -> None:
    server.enqueue(reply_text("Working."))
    runner = runner_for(model_client)
    session = start(runner, "Go", enabled_built_in_tools=("write_todos",))
    session.interaction_mode = "executing"
    session.plan = AgentPlan(
        revision=3,
        status="active",
        tasks=[AgentPlanTask(content="Tag the release", status="in_progress")],
        updated_at="x",
    )
    await runner.run_model_step(session.turn())
    body = server.requests[0].body
    assert body["messages"][1] == {
        "role": "user",
        "content": "[Dex] The current plan, revision 3, is active:\n"
        "- [in_progress] Tag the release",
    }
    assert [t["function"]["name"] for t in body["tools"]] == [
        "get_weather",
        "send_email",
        "write_todos",
    ]


async def test_required_planning_tool_choice_forces_write_todos_once(
    server: ScriptedModelServer,
) -> None:
    forcing = ModelClient(
        "openai/scripted-model", api_base=server.base_url, api_key="t", forced_tool_choice=True
    )
    todos = {"todos": [{"content": "Tag", "status": "pending"}]}
    server.enqueue(reply_tools(("call_1", "write_todos", todos)), reply_text("Plan ready."))
    runner = runner_for(forcing, planning_tool_choice="required")
    session = planning_session(runner)
    first = await runner.run_model_step(session.turn())
    assert isinstance(first, ToolCallsRequested)
    assert server.requests[0].body["tool_choice"] == {
        "type": "function",
        "function": {"name": "write_todos"},
    }
    # RunModel's commit records write_todos and stores the draft plan.
    session.request_tools(first)
    session.finish(
        "call_1", status="succeeded", output='{"status":"updated","revision":1,"task_count":1}'
    )
    session.plan = AgentPlan(
        revision=1,
        status="draft",
        tasks=[AgentPlanTask(content="Tag", status="pending")],
        updated_at="x",
    )
    await runner.run_model_step(session.turn())
    second = server.requests[1].body
    assert "tool_choice" not in second
    assert second["messages"][3] == {
        "role": "user",
        "content": "[Dex] The current plan, revision 1, is draft:\n- [pending] Tag\n"
        + PLANNING_LINE,
    }


async def test_required_is_refused_for_a_model_that_cannot_force_a_tool(
    server: ScriptedModelServer,
) -> None:
    unknown = ModelClient("openai/scripted-model", api_base=server.base_url, api_key="t")
    assert unknown.supports_forced_tool_choice({}) is False  # LiteLLM does not know it
    with pytest.raises(ValueError, match="forced tool choice"):
        runner_for(unknown, planning_tool_choice="required")

    runner = StepwiseRunner(
        AgentDefinition(
            "a", "i", resolve_model=lambda settings: unknown, planning_tool_choice="required"
        )
    )
    outcome = await runner.run_model_step(planning_session(runner).turn())
    assert isinstance(outcome, TurnCompleted)
    assert outcome.turn_error is not None and "forced tool choice" in outcome.turn_error
    assert outcome.usage == AgentUsage()
    assert server.requests == []


def test_forced_tool_choice_follows_litellm_model_information() -> None:
    assert ModelClient("gpt-4o").supports_forced_tool_choice({}) is True
    claude = ModelClient("anthropic/claude-sonnet-4-5")
    assert claude.supports_forced_tool_choice({}) is True
    thinking = {"thinking": {"type": "enabled", "budget_tokens": 2048}}
    assert claude.supports_forced_tool_choice(thinking) is False
    assert claude.supports_forced_tool_choice({"reasoning_effort": "low"}) is False
    assert ModelClient("ollama/llama3").supports_forced_tool_choice({}) is False
    assert ModelClient("ollama/llama3", forced_tool_choice=True).supports_forced_tool_choice({})


def test_a_model_client_hides_its_key() -> None:
    assert "secret" not in repr(ModelClient("openai/x", api_key="secret"))
    assert isinstance(Tool(get_weather.function), Tool)


def test_a_continuation_needs_a_message() -> None:
    with pytest.raises(ValueError, match="blank"):
        TurnContinuation(" ")


def test_signed_thinking_is_kept_for_the_next_request() -> None:
    def delta(**fields: Any) -> Any:
        base = {"content": None, "reasoning_content": None, "tool_calls": None}
        choice = Chunk(delta=Chunk(**{**base, **fields}), finish_reason=None)
        return Chunk(id="msg_1", model="claude", usage=None, choices=[choice])

    reasoning: list[str] = []
    builder = _ReplyBuilder(ModelRequest(messages=[], settings={}, on_reasoning=reasoning.append))
    builder.add(
        delta(
            reasoning_content="Let me ",
            thinking_blocks=[{"type": "thinking", "thinking": "Let me ", "index": 0}],
        )
    )
    builder.add(
        delta(
            reasoning_content="think.",
            thinking_blocks=[{"type": "thinking", "thinking": "think.", "index": 0}],
        )
    )
    builder.add(
        delta(
            thinking_blocks=[{"type": "thinking", "thinking": "", "signature": "sig", "index": 0}]
        )
    )
    builder.add(delta(thinking_blocks=[{"type": "redacted_thinking", "data": "xyz", "index": 1}]))
    builder.add(delta(content="Answer"))
    reply = builder.build(ModelClient("anthropic/claude-sonnet-4-5"))
    assert reasoning == ["Let me ", "think."]
    assert reply.item == {
        "role": "assistant",
        "content": "Answer",
        "thinking_blocks": [
            {"type": "thinking", "thinking": "Let me think.", "signature": "sig"},
            {"type": "redacted_thinking", "data": "xyz"},
        ],
    }
    assert reply.metadata.provider_name == "anthropic"
