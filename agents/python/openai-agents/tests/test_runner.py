"""Runner-level tests: the real SDK and its real OpenAI client against the scripted server."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agents import (
    Agent,
    FunctionTool,
    GuardrailFunctionOutput,
    ModelSettings,
    RunConfig,
    RunContextWrapper,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrailData,
    function_tool,
    handoff,
    input_guardrail,
    output_guardrail,
    tool_input_guardrail,
)
from dex_agents import texts
from dex_agents.runner import (
    ToolCallsRequested,
    ToolExecutionError,
    ToolPolicy,
    TurnCompleted,
)
from dex_agents.testing import Reject, RunnerDriver
from dex_agents.testing.model_server import (
    ScriptedModelServer,
    ScriptedUsage,
    reply_text,
    reply_tools,
)
from dex_agents.types import AgentUsage
from mcp.types import ToolAnnotations
from pydantic import BaseModel

from dex_agents_openai_agents import (
    HANDOFF_EVENT,
    OpenAIAgentsRunner,
    RunContextRequest,
    current_tool_execution,
)
from dex_agents_openai_agents.items import decode_item

MODEL = "gpt-test"


class ToolLog:
    """What the real tools did, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def count(self, name: str) -> int:
        return sum(1 for called, _ in self.calls if called == name)


@pytest.fixture
def log() -> ToolLog:
    return ToolLog()


def weather_tool(log: ToolLog) -> FunctionTool:
    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        log.calls.append(
            ("get_weather", {"city": city, "key": current_tool_execution().idempotency_key})
        )
        return f"sunny in {city}"

    return get_weather


def email_tool(log: ToolLog, fail_with: Exception | None = None) -> FunctionTool:
    @function_tool
    def send_email(to: str, body: str) -> str:
        """Send an email."""
        log.calls.append(("send_email", {"to": to}))
        if fail_with is not None:
            raise fail_with
        return f"sent to {to}"

    return send_email


def input_items(server: ScriptedModelServer, index: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = server.requests[index].body["input"]
    return items


def outputs_by_call(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {i["call_id"]: i["output"] for i in items if i.get("type") == "function_call_output"}


async def test_read_tool_turn_defers_the_call_and_resumes_with_its_result(
    server: ScriptedModelServer, run_config: RunConfig, log: ToolLog
) -> None:
    tool = weather_tool(log)
    original_invoke = tool.on_invoke_tool
    agent = Agent(name="Support", instructions="Help.", tools=[tool], model=MODEL)
    runner = OpenAIAgentsRunner(agent, run_config=run_config)
    session = RunnerDriver(runner, tool_policies={"get_weather": ToolPolicy(effect="read")})
    server.enqueue(
        reply_tools(("call_1", "get_weather", {"city": "Paris"})), reply_text("It is sunny.")
    )

    turn_id = session.start_turn("Weather in Paris?")
    requested = await session.model_step(turn_id, None, [])

    assert isinstance(requested, ToolCallsRequested)
    assert len(server.requests) == 1
    assert server.requests[0].path == "/v1/responses"
    assert log.calls == []  # nothing ran inside the model Step
    [call] = requested.tool_calls
    assert (call.tool_call_id, call.tool_name) == ("call_1", "get_weather")
    assert json.loads(call.arguments) == {"city": "Paris"}
    assert call.policy == ToolPolicy(effect="read", requires_approval=False)
    assert json.loads(call.tool_source_reference or "") == {"agent": "Support"}
    assert requested.usage == AgentUsage(model_calls=1, input_tokens=10, output_tokens=5)

    records = await session.run_tools(turn_id, requested)
    assert log.calls == [("get_weather", {"city": "Paris", "key": "session-1/turn-1/call_1"})]

    completed = await session.model_step(turn_id, requested.framework_run_state, records)
    assert isinstance(completed, TurnCompleted)
    assert completed.turn_error is None
    assert len(server.requests) == 2
    assert outputs_by_call(input_items(server, 1)) == {"call_1": "sunny in Paris"}
    assert log.count("get_weather") == 1  # resuming answered from the record
    assert completed.usage == AgentUsage(model_calls=1, input_tokens=10, output_tokens=5)
    projected = [(m.role, m.text, m.tool_call_id, m.tool_name) for m in completed.new_messages]
    assert projected == [
        ("assistant", None, "call_1", "get_weather"),
        ("tool", None, "call_1", "get_weather"),
        ("assistant", "It is sunny.", None, None),
    ]
    assert completed.new_messages[0].tool_arguments == call.arguments
    assert completed.new_messages[1].tool_output == "sunny in Paris"
    # The application's agent and tool are unchanged.
    assert agent.tools == [tool]
    assert tool.needs_approval is False
    assert tool.on_invoke_tool is original_invoke


async def test_history_replays_as_sdk_input_items(
    server: ScriptedModelServer, run_config: RunConfig, log: ToolLog
) -> None:
    agent = Agent(name="Support", tools=[weather_tool(log)], model=MODEL)
    session = RunnerDriver(OpenAIAgentsRunner(agent, run_config=run_config))
    server.enqueue(
        reply_tools(("call_1", "get_weather", {"city": "Paris"})),
        reply_text("It is sunny."),
        reply_text("You're welcome."),
    )

    await session.turn("Weather in Paris?")
    await session.turn("Thanks!")

    first_turn = [json.loads(m.framework_item) for m in session.messages[:4]]
    assert first_turn[0] == {"role": "user", "content": "Weather in Paris?"}
    assert input_items(server, 2) == [*first_turn, {"role": "user", "content": "Thanks!"}]
    assert [m.role for m in session.messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    assert session.messages[-1].text == "You're welcome."


async def test_the_run_state_keeps_the_stored_history_out_and_restores_it(
    server: ScriptedModelServer, run_config: RunConfig, log: ToolLog
) -> None:
    agent = Agent(name="Support", tools=[weather_tool(log)], model=MODEL)
    session = RunnerDriver(OpenAIAgentsRunner(agent, run_config=run_config))
    server.enqueue(
        reply_text("Hello."),
        reply_tools(("call_1", "get_weather", {"city": "Paris"})),
        reply_text("It is sunny."),
    )

    await session.turn("Hi")
    await session.turn("Weather in Paris?")

    requested = session.outcomes[1]
    assert isinstance(requested, ToolCallsRequested)
    saved = json.loads(requested.framework_run_state)
    assert saved["version"] == 2
    assert saved["history_through"] == 3
    assert saved["run_state"]["original_input"] == []
    # The resumed model call still sent the whole history, then the turn's items.
    history = [json.loads(m.framework_item) for m in session.messages[:3]]
    assert input_items(server, 2)[:3] == history
    assert input_items(server, 1) == history
    assert [i.get("type") for i in input_items(server, 2)[3:]] == [
        "function_call",
        "function_call_output",
    ]
    # The session's parsed items were shared, and nothing changed them.
    for message in session.messages:
        assert session.framework_items.parsed(message, decode_item) == json.loads(
            message.framework_item
        )


async def test_a_run_state_holding_its_history_still_resumes(
    server: ScriptedModelServer, run_config: RunConfig, log: ToolLog
) -> None:
    agent = Agent(name="Support", tools=[weather_tool(log)], model=MODEL)
    session = RunnerDriver(OpenAIAgentsRunner(agent, run_config=run_config))
    server.enqueue(
        reply_tools(("call_1", "get_weather", {"city": "Paris"})), reply_text("It is sunny.")
    )
    turn_id = session.start_turn("Weather in Paris?")
    requested = await session.model_step(turn_id, None, [])
    assert isinstance(requested, ToolCallsRequested)
    records = await session.run_tools(turn_id, requested)

    # As a Worker before version 2 wrote it: the original input inline, no history_through.
    saved = json.loads(requested.framework_run_state)
    saved["version"] = 1
    del saved["history_through"]
    saved["run_state"]["original_input"] = [{"role": "user", "content": "Weather in Paris?"}]
    completed = await session.model_step(turn_id, json.dumps(saved), records)

    assert isinstance(completed, TurnCompleted)
    assert [m.text for m in completed.new_messages][-1] == "It is sunny."
    assert input_items(server, 1)[0] == {"role": "user", "content": "Weather in Paris?"}


async def test_rejected_call_never_runs_and_the_model_sees_the_rejection(
    server: ScriptedModelServer, run_config: RunConfig, log: ToolLog
) -> None:
    agent = Agent(name="Support", tools=[email_tool(log)], model=MODEL)
    session = RunnerDriver(OpenAIAgentsRunner(agent, run_config=run_config))
    server.enqueue(
        reply_tools(("call_a", "send_email", {"to": "a@x", "body": "hi"})),
        reply_text("Not sent."),
        reply_tools(("call_b", "send_email", {"to": "b@x", "body": "hi"})),
        reply_text("Not sent either."),
    )

    await session.turn("mail a", decide=lambda record: Reject("Do not email a."))
    await session.turn("mail b", decide=lambda record: "reject")

    assert log.calls == []
    assert outputs_by_call(input_items(server, 1)) == {"call_a": "Do not email a."}
    assert outputs_by_call(input_items(server, 3))["call_b"] == texts.DEFAULT_REJECTION_TEXT
    call = session.outcomes[0]
    assert isinstance(call, ToolCallsRequested)
    # An unclassified tool defaults to a single attempt with approval.
    assert call.tool_calls[0].policy == ToolPolicy(effect="unclassified", requires_approval=True)


async def test_failed_and_unknown_outcomes_reach_the_model_as_dex_texts(
    server: ScriptedModelServer, run_config: RunConfig, log: ToolLog
) -> None:
    agent = Agent(name="Support", tools=[weather_tool(log), email_tool(log)], model=MODEL)
    session = RunnerDriver(OpenAIAgentsRunner(agent, run_config=run_config))
    server.enqueue(
        reply_tools(
            ("call_1", "get_weather", {"city": "Oslo"}),
            ("call_2", "send_email", {"to": "a@x", "body": "hi"}),
        ),
        reply_text("Done."),
    )
    turn_id = session.start_turn("go")
    requested = await session.model_step(turn_id, None, [])
    assert isinstance(requested, ToolCallsRequested)
    assert len(requested.tool_calls) == 2  # parallel calls of one response
    weather, email = (session.approved_record(turn_id, call) for call in requested.tool_calls)
    records = [
        weather.model_copy(update={"status": "failed", "error": "city service down"}),
        email.model_copy(update={"status": "outcome_unknown", "error": "worker died"}),
    ]

    completed = await session.model_step(turn_id, requested.framework_run_state, records)

    assert isinstance(completed, TurnCompleted)
    assert log.calls == []
    assert outputs_by_call(input_items(server, 1)) == {
        "call_1": "The tool call failed: city service down",
        "call_2": texts.OUTCOME_UNKNOWN_TEXT,
    }


async def test_tool_errors_fail_the_step_or_reach_the_model(
    server: ScriptedModelServer, run_config: RunConfig, log: ToolLog
) -> None:
    visible = Agent(name="A", tools=[email_tool(log, ToolExecutionError("mailbox full"))])
    crashing = Agent(name="B", tools=[email_tool(log, ConnectionError("smtp reset"))])
    server.enqueue(
        reply_tools(("call_1", "send_email", {"to": "a@x", "body": "hi"})),
        reply_tools(("call_2", "send_email", {"to": "b@x", "body": "hi"})),
    )
    for agent, expected in ((visible, ToolExecutionError), (crashing, ConnectionError)):
        agent.model = MODEL
        session = RunnerDriver(OpenAIAgentsRunner(agent, run_config=run_config))
        turn_id = session.start_turn("mail")
        requested = await session.model_step(turn_id, None, [])
        assert isinstance(requested, ToolCallsRequested)
        record = session.approved_record(turn_id, requested.tool_calls[0])
        # The SDK's default formatter would turn any exception into a tool result; in a tool
        # Step only ToolExecutionError is model-visible, anything else fails the attempt.
        with pytest.raises(expected):
            await session.runner.execute_deferred_tool_call(session.execution(record))
    assert log.count("send_email") == 2


async def test_policies_from_tool_metadata_and_overrides(
    server: ScriptedModelServer, run_config: RunConfig, log: ToolLog
) -> None:
    async def lookup(ctx: Any, arguments: str) -> str:
        return "found"

    def mcp_tool(name: str, annotations: ToolAnnotations) -> FunctionTool:
        return FunctionTool(
            name=name,
            description=name,
            params_json_schema={"type": "object", "properties": {}, "required": []},
            on_invoke_tool=lookup,
            _mcp_annotations=annotations,
        )

    async def large_amounts(
        ctx: RunContextWrapper[Any], params: dict[str, Any], call_id: str
    ) -> bool:
        return bool(params.get("amount", 0) > 100)

    @function_tool(needs_approval=large_amounts)
    def refund(amount: int) -> str:
        """Refund."""
        return "refunded"

    tools = [
        mcp_tool("search", ToolAnnotations(readOnlyHint=True)),
        mcp_tool("upsert", ToolAnnotations(idempotentHint=True, destructiveHint=True)),
        mcp_tool("delete", ToolAnnotations(destructiveHint=True)),
        refund,
        weather_tool(log),
    ]
    agent = Agent(name="Support", tools=tools, model=MODEL)
    session = RunnerDriver(
        OpenAIAgentsRunner(agent, run_config=run_config),
        tool_policies={"upsert": ToolPolicy(requires_approval=True)},
        default_tool_effect="idempotent_write",
    )
    server.enqueue(
        reply_tools(
            ("c1", "search", {}),
            ("c2", "upsert", {}),
            ("c3", "delete", {}),
            ("c4", "refund", {"amount": 500}),
            ("c5", "refund", {"amount": 5}),
            ("c6", "get_weather", {"city": "Rome"}),
        )
    )

    requested = await session.model_step(session.start_turn("go"), None, [])

    assert isinstance(requested, ToolCallsRequested)
    assert {call.tool_call_id: call.policy for call in requested.tool_calls} == {
        "c1": ToolPolicy(effect="read", requires_approval=False),
        "c2": ToolPolicy(effect="idempotent_write", requires_approval=True),
        "c3": ToolPolicy(effect="idempotent_write", requires_approval=False),
        "c4": ToolPolicy(effect="idempotent_write", requires_approval=True),
        "c5": ToolPolicy(effect="idempotent_write", requires_approval=False),
        "c6": ToolPolicy(effect="idempotent_write", requires_approval=False),
    }


async def test_handoff_runs_inside_the_model_step_and_keeps_the_new_agent(
    server: ScriptedModelServer, run_config: RunConfig, log: ToolLog
) -> None:
    @function_tool
    def refund(order_id: str) -> str:
        """Refund an order."""
        log.calls.append(("refund", {"order_id": order_id}))
        return f"refunded {order_id}"

    billing = Agent(name="Billing", instructions="You do billing.", tools=[refund], model=MODEL)
    triage = Agent(
        name="Triage",
        instructions="You triage.",
        tools=[weather_tool(log)],
        handoffs=[handoff(billing)],
        model=MODEL,
    )
    session = RunnerDriver(OpenAIAgentsRunner(triage, run_config=run_config))
    server.enqueue(
        reply_tools(("call_h", "transfer_to_billing", {})),
        reply_tools(("call_r", "refund", {"order_id": "o-7"})),
        reply_text("Refunded."),
    )

    turn_id = session.start_turn("I want a refund")
    requested = await session.model_step(turn_id, None, [])

    # One model Step, two model calls: the SDK ran the handoff and called Billing's model.
    assert isinstance(requested, ToolCallsRequested)
    assert len(server.requests) == 2
    assert server.requests[1].body["instructions"] == "You do billing."
    assert requested.usage is not None and requested.usage.model_calls == 2
    assert session.events.of_type(HANDOFF_EVENT) == [
        {"from_agent": "Triage", "to_agent": "Billing", "tool_call_id": "call_h"}
    ]
    [call] = requested.tool_calls
    assert json.loads(call.tool_source_reference or "") == {"agent": "Billing"}
    records = await session.run_tools(turn_id, requested)
    assert log.calls == [("refund", {"order_id": "o-7"})]

    # A fresh runner (another Worker process) resumes with Billing as the current agent.
    session.runner = OpenAIAgentsRunner(triage, run_config=run_config)
    completed = await session.model_step(turn_id, requested.framework_run_state, records)

    assert isinstance(completed, TurnCompleted)
    assert server.requests[2].body["instructions"] == "You do billing."
    assert outputs_by_call(input_items(server, 2))["call_r"] == "refunded o-7"
    assert log.count("refund") == 1
    assert [m.tool_name for m in completed.new_messages if m.role == "tool"] == [
        "transfer_to_billing",
        "refund",
    ]


async def test_input_guardrail_trip_ends_the_turn_with_an_error(
    server: ScriptedModelServer, run_config: RunConfig, log: ToolLog
) -> None:
    @input_guardrail(run_in_parallel=False)
    def no_secrets(ctx: Any, agent: Any, user_input: Any) -> GuardrailFunctionOutput:
        text = json.dumps(user_input)
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered="password" in text)

    agent = Agent(
        name="Support", tools=[weather_tool(log)], input_guardrails=[no_secrets], model=MODEL
    )
    session = RunnerDriver(OpenAIAgentsRunner(agent, run_config=run_config))

    completed = (await session.turn("my password is hunter2")).final

    assert completed.turn_error == "input guardrail 'no_secrets' tripped"
    assert completed.new_messages == ()
    assert server.requests == []
    assert log.calls == []


async def test_input_guardrails_run_in_the_first_model_step_only(
    server: ScriptedModelServer, run_config: RunConfig, log: ToolLog
) -> None:
    checked: list[Any] = []

    @input_guardrail
    def counting(ctx: Any, agent: Any, user_input: Any) -> GuardrailFunctionOutput:
        checked.append(user_input)
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered=False)

    agent = Agent(name="Support", tools=[weather_tool(log)], input_guardrails=[counting])
    agent.model = MODEL
    session = RunnerDriver(OpenAIAgentsRunner(agent, run_config=run_config))
    server.enqueue(reply_tools(("call_2", "get_weather", {"city": "Rome"})), reply_text("Warm."))
    finished = (await session.turn("weather in Rome?")).final

    assert finished.turn_error is None
    assert len(server.requests) == 2
    assert len(checked) == 1
    assert log.count("get_weather") == 1


class Ticket(BaseModel):
    category: str
    priority: int


async def test_structured_output_and_model_settings(
    server: ScriptedModelServer, run_config: RunConfig
) -> None:
    agent = Agent(
        name="Classifier",
        output_type=Ticket,
        model=MODEL,
        model_settings=ModelSettings(temperature=0.25, max_tokens=300),
    )
    session = RunnerDriver(OpenAIAgentsRunner(agent, run_config=run_config))
    server.enqueue(reply_text('{"category": "billing", "priority": 2}'))

    completed = (await session.turn("My invoice is wrong")).final

    body = server.requests[0].body
    assert body["temperature"] == 0.25
    assert body["max_output_tokens"] == 300
    assert body["text"]["format"]["type"] == "json_schema"
    assert body["text"]["format"]["name"] == "final_output"
    [answer] = completed.new_messages
    assert Ticket.model_validate_json(answer.text or "") == Ticket(category="billing", priority=2)


async def test_usage_and_streamed_deltas(
    server: ScriptedModelServer, run_config: RunConfig
) -> None:
    agent = Agent(name="Support", model=MODEL)
    session = RunnerDriver(OpenAIAgentsRunner(agent, run_config=run_config))
    usage = ScriptedUsage(
        input_tokens=120, output_tokens=40, cached_input_tokens=100, reasoning_tokens=16
    )
    server.enqueue(reply_text("Hello there, friend.", reasoning="Greet them.", usage=usage))

    completed = (await session.turn("hi")).final

    assert completed.usage == AgentUsage(
        model_calls=1,
        input_tokens=120,
        output_tokens=40,
        cached_input_tokens=100,
        reasoning_tokens=16,
    )
    text = "".join(p["text"] for p in session.events.of_type("text_delta"))
    assert text == "Hello there, friend."
    assert len(session.events.of_type("text_delta")) > 1
    assert "".join(p["text"] for p in session.events.of_type("reasoning_delta")) == "Greet them."
    assert completed.model_call_metadata is not None
    assert completed.model_call_metadata.response_id == "resp_scripted_1"


async def test_context_factory_builds_the_context_of_every_step(
    server: ScriptedModelServer, run_config: RunConfig
) -> None:
    requests: list[RunContextRequest] = []

    async def make_context(request: RunContextRequest) -> dict[str, str]:
        requests.append(request)
        return {"user": "ada", "step": "tool" if request.tool_call_id else "model"}

    @function_tool
    def whoami(ctx: RunContextWrapper[dict[str, str]]) -> str:
        """Who is asking."""
        return f"{ctx.context['user']} ({ctx.context['step']})"

    def instructions(ctx: RunContextWrapper[dict[str, str]], agent: Any) -> str:
        return f"The user is {ctx.context['user']}."

    agent = Agent(name="Support", instructions=instructions, tools=[whoami], model=MODEL)
    session = RunnerDriver(
        OpenAIAgentsRunner(agent, context_factory=make_context, run_config=run_config)
    )
    server.enqueue(reply_tools(("call_1", "whoami", {})), reply_text("You are Ada."))

    await session.turn("who am I?")

    assert requests == [
        RunContextRequest("session-1", "turn-1"),
        RunContextRequest("session-1", "turn-1", "call_1"),
        RunContextRequest("session-1", "turn-1"),
    ]
    assert server.requests[1].body["instructions"] == "The user is ada."
    assert outputs_by_call(input_items(server, 1)) == {"call_1": "ada (tool)"}


async def test_tool_guardrails_run_in_the_tool_step(
    server: ScriptedModelServer, run_config: RunConfig, log: ToolLog
) -> None:
    @tool_input_guardrail
    def no_competitors(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        if "acme" in data.context.tool_arguments:
            return ToolGuardrailFunctionOutput.reject_content("We do not email competitors.")
        return ToolGuardrailFunctionOutput.allow()

    @function_tool(tool_input_guardrails=[no_competitors])
    def send_email(to: str) -> str:
        """Send an email."""
        log.calls.append(("send_email", {"to": to}))
        return "sent"

    agent = Agent(name="Support", tools=[send_email], model=MODEL)
    session = RunnerDriver(OpenAIAgentsRunner(agent, run_config=run_config))
    server.enqueue(
        reply_tools(
            ("c1", "send_email", {"to": "bob@acme.com"}), ("c2", "send_email", {"to": "al@ok.com"})
        ),
        reply_text("One sent."),
    )

    await session.turn("email both")

    assert log.calls == [("send_email", {"to": "al@ok.com"})]
    assert outputs_by_call(input_items(server, 1)) == {
        "c1": "We do not email competitors.",
        "c2": "sent",
    }


async def test_unfinished_turn_messages_answer_every_call(
    server: ScriptedModelServer, run_config: RunConfig, log: ToolLog
) -> None:
    agent = Agent(name="Support", tools=[weather_tool(log), email_tool(log)], model=MODEL)
    session = RunnerDriver(OpenAIAgentsRunner(agent, run_config=run_config))
    server.enqueue(
        reply_tools(
            ("call_1", "get_weather", {"city": "Oslo"}),
            ("call_2", "send_email", {"to": "a@x", "body": "hi"}),
            text="Let me check.",
        )
    )
    turn_id = session.start_turn("go")
    requested = await session.model_step(turn_id, None, [])
    assert isinstance(requested, ToolCallsRequested)
    records = await session.run_tools(
        turn_id, requested, lambda r: Reject("no") if r.tool_name == "send_email" else "run"
    )

    context = session.context(turn_id, requested.framework_run_state, records)
    messages = await session.runner.build_unfinished_turn_messages(context)

    assert [(m.role, m.text, m.tool_call_id, m.tool_output) for m in messages] == [
        ("assistant", "Let me check.", None, None),
        ("assistant", None, "call_1", None),
        ("assistant", None, "call_2", None),
        ("tool", None, "call_1", "sunny in Oslo"),
        ("tool", None, "call_2", "no"),
    ]
    assert (
        await session.runner.build_unfinished_turn_messages(session.context(turn_id, None, []))
        == []
    )


async def test_malformed_arguments_fail_the_call_without_running_the_tool(
    server: ScriptedModelServer, run_config: RunConfig, log: ToolLog
) -> None:
    agent = Agent(name="Support", tools=[weather_tool(log)], model=MODEL)
    session = RunnerDriver(OpenAIAgentsRunner(agent, run_config=run_config))
    server.enqueue(reply_tools(("call_1", "get_weather", "{not json")), reply_text("Sorry."))

    await session.turn("weather?")

    assert log.calls == []
    output = outputs_by_call(input_items(server, 1))["call_1"]
    assert output.startswith("The tool call failed: Invalid JSON input for tool get_weather")


async def test_output_guardrail_trip_and_max_turns_end_the_turn_with_an_error(
    server: ScriptedModelServer, run_config: RunConfig, log: ToolLog
) -> None:
    @output_guardrail
    def no_refund_promises(ctx: Any, agent: Any, output: Any) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered="refund" in output)

    guarded = Agent(name="Support", output_guardrails=[no_refund_promises], model=MODEL)
    limited = Agent(name="Limited", tools=[weather_tool(log)], model=MODEL)
    server.enqueue(
        reply_text("You will get a refund."),
        reply_tools(("call_1", "get_weather", {"city": "Oslo"})),
        reply_tools(("call_2", "get_weather", {"city": "Rome"})),
    )

    blocked = (
        await RunnerDriver(OpenAIAgentsRunner(guarded, run_config=run_config)).turn("hi")
    ).final
    looping = RunnerDriver(OpenAIAgentsRunner(limited, run_config=run_config, max_turns=1))
    stopped = (await looping.turn("weather?")).final

    assert blocked.turn_error == "output guardrail 'no_refund_promises' tripped"
    assert blocked.new_messages == ()
    assert blocked.usage is not None and blocked.usage.model_calls == 1
    assert stopped.turn_error == "Max turns (1) exceeded"
    assert log.count("get_weather") == 1
