"""Built-in tool validation and plan texts, exactly as the contract words them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dex_agents.stepwise import (
    BUILT_IN_TOOL_DEFINITIONS,
    AskUserArguments,
    BuiltInArgumentError,
    DurableWaitArguments,
    WriteTodosArguments,
    ask_user_result,
    build_plan_note,
    durable_wait_result,
    plan_after_write_todos,
    validate_built_in_call,
    write_todos_result,
)
from dex_agents.types import AgentPlan, AgentPlanTask

NOW = "2026-01-01T00:00:00.000Z"


def error(tool: str, text: str) -> str:
    result = validate_built_in_call(tool, text)  # type: ignore[arg-type]
    assert isinstance(result, BuiltInArgumentError), result
    return result.message


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not json",
        "[]",
        '"text"',
        "null",
        "3",
        '{"question": NaN}',
        '{"question": Infinity}',
        '{"question": -Infinity}',
        "{'question': 'single quotes'}",
        '{"question": "x",}',
    ],
)
@pytest.mark.parametrize("tool", ["ask_user", "durable_wait"])
def test_text_that_is_not_a_strict_json_object_fails(tool: str, text: str) -> None:
    assert error(tool, text) == f"invalid {tool} arguments: arguments must be a JSON object"


def test_write_todos_errors_use_the_todos_prefix() -> None:
    assert error("write_todos", "NaN") == "invalid todos: arguments must be a JSON object"
    assert error("write_todos", "{}") == "invalid todos: todos is required"
    assert error("write_todos", '{"todos": {}}') == "invalid todos: todos must be a list"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"b": 1, "a": 2, "question": "q"}', 'unknown argument "a"'),
        ('{"Z": 1, "a": 2, "question": "q"}', 'unknown argument "Z"'),
        ('{"é": 1, "z": 2, "question": "q"}', 'unknown argument "z"'),
        ('{"question": "q", "\\ud83d\\ude00": 1, "\\uff41": 2}', 'unknown argument "ａ"'),
        ("{}", "question is required"),
        ('{"question": null}', "question must be a string"),
        ('{"question": 3}', "question must be a string"),
        ('{"question": "  "}', "question must not be blank"),
        ('{"question": "q", "choices": "a"}', "choices must be a list of strings"),
        ('{"question": "q", "choices": ["a", 1]}', "choices must be a list of strings"),
        ('{"question": "q", "choices": ["a", " "]}', "choices must not contain a blank string"),
        ('{"question": "q", "allows_free_text": "no"}', "allows_free_text must be a boolean"),
        (
            '{"question": "q", "allows_free_text": false}',
            "choices must not be empty when allows_free_text is false",
        ),
    ],
)
def test_ask_user_errors(text: str, reason: str) -> None:
    assert error("ask_user", text) == f"invalid ask_user arguments: {reason}"


def test_ask_user_null_optional_arguments_mean_absent() -> None:
    parsed = validate_built_in_call(
        "ask_user", '{"question": "Which?", "choices": null, "allows_free_text": null}'
    )
    assert parsed == AskUserArguments("Which?", (), True)
    parsed = validate_built_in_call(
        "ask_user", '{"question": "Which?", "choices": ["a", "b"], "allows_free_text": false}'
    )
    assert parsed == AskUserArguments("Which?", ("a", "b"), False)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"seconds": 5, "reason": "r", "later": 1}', 'unknown argument "later"'),
        ('{"reason": "r"}', "seconds is required"),
        ('{"seconds": "5", "reason": "r"}', "seconds must be a number"),
        ('{"seconds": true, "reason": "r"}', "seconds must be a number"),
        ('{"seconds": null, "reason": "r"}', "seconds must be a number"),
        ('{"seconds": 0, "reason": "r"}', "seconds must be a positive number"),
        ('{"seconds": -1, "reason": "r"}', "seconds must be a positive number"),
        ('{"seconds": 1e400, "reason": "r"}', "seconds must be a positive number"),
        ('{"seconds": 5}', "reason is required"),
        ('{"seconds": 5, "reason": 3}', "reason must be a string"),
    ],
)
def test_durable_wait_errors(text: str, reason: str) -> None:
    assert error("durable_wait", text) == f"invalid durable_wait arguments: {reason}"


def test_durable_wait_parses_and_honors_a_maximum() -> None:
    assert validate_built_in_call("durable_wait", '{"seconds": 1.5, "reason": "poll"}') == (
        DurableWaitArguments(1.5, "poll")
    )
    capped = validate_built_in_call(
        "durable_wait", '{"seconds": 90, "reason": "r"}', max_wait_seconds=60
    )
    assert isinstance(capped, BuiltInArgumentError)
    assert capped.message == "invalid durable_wait arguments: seconds must be at most 60"


@pytest.mark.parametrize(
    ("todos", "reason"),
    [
        (["x"], "todos[0] must be an object"),
        ([{"content": "a", "status": "pending", "b": 1, "a": 1}], 'todos[0] has unknown field "a"'),
        ([{"status": "pending"}], "todos[0].content is required"),
        ([{"content": 1, "status": "pending"}], "todos[0].content must be a string"),
        ([{"content": " ", "status": "pending"}], "todos[0].content must not be blank"),
        (
            [{"content": "a", "status": "pending"}, {"content": "b"}],
            "todos[1].status is required",
        ),
        (
            [{"content": "a", "status": "done"}],
            "todos[0].status must be one of pending, in_progress, completed",
        ),
    ],
)
def test_write_todos_errors(todos: object, reason: str) -> None:
    text = json.dumps({"todos": todos})
    assert error("write_todos", text) == f"invalid todos: {reason}"
    assert error("write_todos", '{"todos": [], "x": 1}') == 'invalid todos: unknown argument "x"'


def test_write_todos_parses_tasks() -> None:
    text = (
        '{"todos": [{"content": "Read", "status": "completed"},'
        ' {"content": "Write", "status": "pending"}]}'
    )
    assert validate_built_in_call("write_todos", text) == WriteTodosArguments(
        (
            AgentPlanTask(content="Read", status="completed"),
            AgentPlanTask(content="Write", status="pending"),
        )
    )
    assert validate_built_in_call("write_todos", '{"todos": []}') == WriteTodosArguments(())


def test_an_unknown_tool_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        validate_built_in_call("search", "{}")  # type: ignore[arg-type]


def test_definitions_are_chat_completions_tools() -> None:
    assert set(BUILT_IN_TOOL_DEFINITIONS) == {"ask_user", "durable_wait", "write_todos"}
    for name, definition in BUILT_IN_TOOL_DEFINITIONS.items():
        assert definition["type"] == "function"
        assert definition["function"]["name"] == name
        assert definition["function"]["parameters"]["type"] == "object"
    todos = BUILT_IN_TOOL_DEFINITIONS["write_todos"]["function"]["parameters"]
    status = todos["properties"]["todos"]["items"]["properties"]["status"]
    assert status["enum"] == ["pending", "in_progress", "completed"]


def test_results_are_compact_json() -> None:
    assert ask_user_result("Paris, é") == '{"status":"answered","answer":"Paris, é"}'
    assert durable_wait_result(30, "poll") == (
        '{"status":"completed","waited_seconds":30,"reason":"poll"}'
    )


def plan(status: str, *tasks: tuple[str, str], revision: int = 2) -> AgentPlan:
    return AgentPlan(
        revision=revision,
        status=status,
        tasks=[AgentPlanTask(content=c, status=s) for c, s in tasks],
        updated_at=NOW,
    )


def test_write_todos_replaces_the_plan_by_the_spec_rule() -> None:
    pending = [AgentPlanTask(content="a", status="pending")]
    done = [AgentPlanTask(content="a", status="completed")]
    first = plan_after_write_todos(None, pending, "planning", NOW)
    assert (first.revision, first.status) == (1, "draft")
    assert plan_after_write_todos(first, pending, "executing", NOW).status == "active"
    assert plan_after_write_todos(first, done, "chat", NOW).status == "completed"
    cleared = plan_after_write_todos(first, [], "planning", NOW)
    assert (cleared.revision, cleared.status) == (2, "cleared")
    assert write_todos_result(first) == '{"status":"updated","revision":1,"task_count":1}'
    assert write_todos_result(cleared) == '{"status":"cleared","revision":2}'


PLANNING_LINE = (
    "This turn only plans: write or revise the plan with write_todos, and do not do or claim "
    "any of its tasks. The user reviews the plan before it runs."
)


def test_plan_note_in_a_planning_turn() -> None:
    draft = plan("draft", ("Read the code", "completed"), ("Fix the bug", "pending"))
    assert build_plan_note(draft, "planning") == (
        "[Dex] The current plan, revision 2, is draft:\n"
        "- [completed] Read the code\n"
        "- [pending] Fix the bug\n" + PLANNING_LINE
    )
    assert build_plan_note(None, "planning") == "[Dex] There is no plan yet.\n" + PLANNING_LINE
    assert build_plan_note(plan("cleared", revision=3), "planning") == (
        "[Dex] There is no plan yet.\n" + PLANNING_LINE
    )


def test_plan_note_outside_a_planning_turn() -> None:
    active = plan("active", ("Fix the bug", "in_progress"))
    assert build_plan_note(active, "executing") == (
        "[Dex] The current plan, revision 2, is active:\n- [in_progress] Fix the bug"
    )
    assert build_plan_note(active, "chat") == build_plan_note(active, "executing")
    assert build_plan_note(None, "chat") is None
    assert build_plan_note(plan("cleared"), "executing") is None


def test_the_main_entry_point_and_stepwise_import_without_litellm() -> None:
    code = (
        "import sys, dex_agents, dex_agents.stepwise; "
        "assert 'litellm' not in sys.modules, 'litellm was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_missing_litellm_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['litellm'] = None\n"
        "from dex_agents.stepwise import model\n"
        "try:\n"
        "    model.litellm()\n"
        "except ImportError as error:\n"
        "    assert \"pip install --find-links dist 'dex-agents[stepwise]'\" in str(error)\n"
        "    assert '--extra stepwise' in str(error), error\n"
        "else:\n"
        "    raise AssertionError('no ImportError')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
