"""Tool schemas from signatures and docstrings, argument validation, and tool execution."""

from __future__ import annotations

import asyncio
import threading
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from dex_agents.errors import NotInToolStepError
from dex_agents.runner import (
    ToolExecutionError,
    ToolExecutionResult,
    ToolInputRequested,
    ToolTaskStarted,
)
from dex_agents.stepwise import (
    AgentDefinition,
    StepwiseRunner,
    Tool,
    current_tool_execution,
    tool,
)
from dex_agents.stepwise.tools import parse_docstring
from dex_agents.types import AgentToolCall

from .conftest import Session


def search(
    query: str,
    limit: int = 5,
    tags: list[str] | None = None,
    mode: Literal["fast", "deep"] = "fast",
    filters: dict[str, float] | None = None,
) -> str:
    """Search the documents.

    Finds the documents that match best.

    Args:
        query: What to look for.
        limit (int): How many results to return,
            at most 50.
        tags: Only documents with these tags.
        mode: How hard to look.

    Returns:
        The matching documents.
    """
    return query


class Address(BaseModel):
    city: str
    zip_code: str | None = None


def test_schema_from_signature_and_docstring() -> None:
    definition = Tool(search).definition()
    function = definition["function"]
    assert function["name"] == "search"
    assert (
        function["description"] == "Search the documents.\n\nFinds the documents that match best."
    )
    parameters = function["parameters"]
    assert parameters["type"] == "object"
    assert parameters["required"] == ["query"]
    assert parameters["additionalProperties"] is False
    properties = parameters["properties"]
    assert properties["query"] == {"type": "string", "description": "What to look for."}
    assert properties["limit"] == {
        "type": "integer",
        "default": 5,
        "description": "How many results to return, at most 50.",
    }
    assert properties["tags"]["anyOf"] == [
        {"type": "array", "items": {"type": "string"}},
        {"type": "null"},
    ]
    assert properties["tags"]["description"] == "Only documents with these tags."
    assert properties["mode"]["enum"] == ["fast", "deep"]
    assert properties["filters"]["anyOf"][0] == {
        "type": "object",
        "additionalProperties": {"type": "number"},
    }
    assert "description" not in properties["filters"]
    assert "title" not in str(parameters)


def test_annotated_descriptions_nested_models_and_a_parameter_named_title() -> None:
    @tool(effect="idempotent_write", name="save_address")
    async def save(
        title: Annotated[str, Field(description="The address's label.")],
        address: Address,
        json: bool = False,
    ) -> dict[str, Any]:
        """Save an address."""
        return {"title": title, "city": address.city, "json": json}

    assert isinstance(save, Tool)
    assert (save.name, save.effect, save.requires_approval) == (
        "save_address",
        "idempotent_write",
        None,
    )
    parameters = save.parameters
    assert parameters["required"] == ["title", "address"]
    assert parameters["properties"]["title"] == {
        "type": "string",
        "description": "The address's label.",
    }
    assert parameters["properties"]["address"] == {"$ref": "#/$defs/Address"}
    assert set(parameters["$defs"]["Address"]["properties"]) == {"city", "zip_code"}
    assert parameters["properties"]["json"] == {"type": "boolean", "default": False}


def test_docstring_sections() -> None:
    description, parameters = parse_docstring(
        "Summary.\n\nArguments:\n    a: First.\n    b (int, optional): Second\n        line.\n"
        "\nRaises:\n    ValueError: never.\n"
    )
    assert description == "Summary."
    assert parameters == {"a": "First.", "b": "Second line."}
    assert parse_docstring(None) == ("", {})


def test_bad_tool_definitions_are_refused() -> None:
    def star(*args: int) -> None:
        """Not allowed."""

    with pytest.raises(ValueError, match="args"):
        Tool(star)
    with pytest.raises(ValueError, match="tool name"):
        Tool(search, name="has space")

    def other() -> str:
        return ""

    with pytest.raises(ValueError, match="two tools"):
        StepwiseRunner(
            AgentDefinition("a", "i", tools=[search, Tool(other, name="search")], model="m")
        )


async def run(tool_value: Any, arguments: str) -> ToolExecutionResult | ToolInputRequested:
    runner = StepwiseRunner(AgentDefinition("a", "i", tools=[tool_value], model="m"))
    name = tool_value.name if isinstance(tool_value, Tool) else tool_value.__name__
    record = AgentToolCall(
        tool_call_id="call_1",
        turn_id="turn-1",
        tool_name=name,
        arguments=arguments,
        effect="read",
        requires_approval=False,
        status="approved",
        deferral_order=0,
    )
    return await runner.execute_deferred_tool_call(Session().execution(record))


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("not json", "invalid arguments for tool search: arguments must be a JSON object"),
        ("[1]", "invalid arguments for tool search: arguments must be a JSON object"),
        ('{"query": NaN}', "invalid arguments for tool search: arguments must be a JSON object"),
        ("{}", "invalid arguments for tool search: query: Field required"),
        (
            '{"query": "q", "limit": "many"}',
            "invalid arguments for tool search: limit: Input should be a valid integer, "
            "unable to parse string as an integer",
        ),
        (
            '{"query": "q", "mode": "slow"}',
            "invalid arguments for tool search: mode: Input should be 'fast' or 'deep'",
        ),
        (
            '{"query": "q", "extra": 1}',
            "invalid arguments for tool search: extra: Extra inputs are not permitted",
        ),
    ],
)
async def test_arguments_are_validated_against_the_schema(arguments: str, message: str) -> None:
    with pytest.raises(ToolExecutionError) as raised:
        await run(search, arguments)
    assert str(raised.value) == message


async def test_a_sync_tool_runs_once_in_a_thread_with_the_execution_reachable() -> None:
    calls: list[tuple[str, str, bool]] = []

    def charge(amount: int, note: str = "") -> dict[str, Any]:
        """Charge a card."""
        execution = current_tool_execution()
        on_loop_thread = threading.current_thread() is threading.main_thread()
        calls.append((execution.idempotency_key, note, on_loop_thread))
        return {"charged": amount}

    result = await run(charge, '{"amount": "12"}')
    assert result == ToolExecutionResult('{"charged":12}')
    assert calls == [("session-1/turn-1/call_1", "", False)]


async def test_an_async_tool_and_return_values() -> None:
    async def echo(value: Any) -> Any:
        await asyncio.sleep(0)
        assert current_tool_execution().tool_call.tool_call_id == "call_1"
        return value

    assert await run(echo, '{"value": "text"}') == ToolExecutionResult("text")
    assert await run(echo, '{"value": [1, {"a": null}]}') == ToolExecutionResult('[1,{"a":null}]')
    assert await run(echo, '{"value": null}') == ToolExecutionResult("null")


async def test_a_tool_can_ask_the_user_first() -> None:
    def delete_file(path: str) -> ToolInputRequested | str:
        """Delete a file."""
        answers = current_tool_execution().input_answers
        if not answers:
            return ToolInputRequested(
                f"Delete {path}?", choices=("yes", "no"), allows_free_text=False
            )
        return "deleted" if answers[-1].answer == "yes" else "kept"

    asked = await run(delete_file, '{"path": "a.txt"}')
    assert asked == ToolInputRequested("Delete a.txt?", ("yes", "no"), False)


async def test_tool_errors() -> None:
    def broken() -> str:
        """Fails for the model."""
        raise ToolExecutionError("the disk is full")

    def crashing() -> str:
        """Fails the attempt."""
        raise RuntimeError("bug")

    with pytest.raises(ToolExecutionError, match="the disk is full"):
        await run(broken, "{}")
    with pytest.raises(RuntimeError, match="bug"):
        await run(crashing, "")
    with pytest.raises(NotInToolStepError, match="only available inside"):
        current_tool_execution()


async def test_an_unknown_tool_fails_for_the_model() -> None:
    runner = StepwiseRunner(AgentDefinition("a", "i", tools=[search], model="m"))
    record = AgentToolCall(
        tool_call_id="c",
        turn_id="turn-1",
        tool_name="nope",
        arguments="{}",
        effect="read",
        requires_approval=False,
        status="approved",
        deferral_order=0,
    )
    with pytest.raises(ToolExecutionError, match="unknown tool 'nope'"):
        await runner.execute_deferred_tool_call(Session().execution(record))


async def test_a_tool_stays_callable_and_cannot_start_a_task() -> None:
    @tool
    def started() -> ToolTaskStarted:
        """Starts remote work."""
        return ToolTaskStarted("task-1", 5)

    assert started() == ToolTaskStarted("task-1", 5)
    with pytest.raises(TypeError, match="ToolTaskStarted"):
        await run(started, "{}")


def test_an_unresolvable_type_hint_is_named() -> None:
    class Local(BaseModel):
        x: int

    def uses(value: Local) -> None:
        """Uses a class its module does not define."""

    with pytest.raises(ValueError, match="type hint of value"):
        Tool(uses)
